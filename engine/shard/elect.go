package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lease timing defaults: controller-runtime's leader election's, but for
// a retry period of 1 s instead of 2: a replica notices an expired Lease (and
// renews its own) twice as often, so that a dead replica's ranges are taken
// within the lease duration and 3 s, for one write per second per range.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = time.Second
)

// Options configure Run.
type Options struct {
	// Leases reads and writes the Leases.
	Leases coordinationv1client.LeasesGetter
	// Namespace holds the Leases.
	Namespace string
	// Identity names this replica in the Leases it holds.
	Identity string
	// Shards is the number of ranges.
	Shards int
	// Fence names Leases of Namespace that fence the replica while they
	// are held and not expired, as a range Lease of another shard count
	// does (fence.go): the leader election Lease of an unsharded cueop.
	Fence []string
	// LeaseDuration, RenewDeadline and RetryPeriod are the lease timing (see
	// k8s.io/client-go/tools/leaderelection); zero means the defaults. A
	// holder that cannot renew for RenewDeadline stops serving the range; it
	// has LeaseDuration - RenewDeadline to drain before another replica may
	// take it.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Serve serves range r while this replica holds it. It returns once
	// ctx is done and nothing of r is reconciled any more (drained); the
	// Lease is released only then. A Serve that returns early gives the
	// range up.
	Serve func(ctx context.Context, r Range)
	// Log is told of every range acquired and lost.
	Log logr.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	switch {
	case o.Shards < 1:
		return o, fmt.Errorf("shards: %d, want 1 or more", o.Shards)
	case o.Identity == "":
		return o, errors.New("shards: no replica identity")
	case o.Namespace == "":
		return o, errors.New("shards: no namespace for the shard Leases")
	case o.Leases == nil || o.Serve == nil:
		return o, errors.New("shards: no Lease client or no Serve")
	}
	return o, nil
}

// Run competes for every range's Lease and serves the ranges it holds,
// until ctx is done; it returns once every range it held is drained and
// its Lease released.
func Run(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	held.WithLabelValues(opts.Identity).Set(0)
	defer held.DeleteLabelValues(opts.Identity)
	setFenced(opts.Identity, true) // until the first member count
	defer fencedGauge.DeleteLabelValues(opts.Identity)
	b := newBalance(opts)
	var wg sync.WaitGroup
	counted := make(chan struct{})
	wg.Go(func() { b.run(ctx, counted) })
	// The first member count decides the fence before any range is tried.
	select {
	case <-counted:
	case <-ctx.Done():
	}
	for _, r := range Ranges(opts.Shards) {
		wg.Go(func() { opts.compete(ctx, r, b) })
	}
	wg.Wait()
	return nil
}

// compete holds r whenever it can, until ctx is done.
func (o Options) compete(ctx context.Context, r Range, b *balance) {
	for ctx.Err() == nil {
		if err := o.term(ctx, r, b); err != nil {
			if ctx.Err() != nil {
				return // shutting down: not an election error
			}
			o.Log.Error(err, "shard range election", "range", r.Label(), "lease", r.LeaseName())
			select {
			case <-ctx.Done():
			case <-time.After(o.RetryPeriod):
			}
		}
	}
}

// term waits until it holds r, serves it until the Lease is lost, the
// range is given up (balance) or ctx is done, drains it and releases the
// Lease. It returns early, without holding r, only when ctx is done.
func (o Options) term(ctx context.Context, r Range, b *balance) error {
	lock := &trackedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: r.LeaseName()},
		Client:     o.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
		Labels:     map[string]string{"app.kubernetes.io/managed-by": "cueop", wellknown.LabelShard: r.Label()},
	}, identity: o.Identity, balance: b}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: r.LeaseName(),
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(sctx context.Context) {
				defer close(served)
				defer cancel() // a Serve that returns early gives the range up
				b.acquired(r, cancel)
				defer b.lost(r)
				o.serve(sctx, r)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	le.Run(tctx)
	if !lock.acquired.Load() {
		return nil // ctx is done
	}
	// The elector starts OnStartedLeading right after it acquires the
	// Lease, and cancels its context when it stops renewing: wait for the
	// range to drain, then let the Lease go.
	<-served
	return o.release(lock, r)
}

// serve serves r and keeps the held-ranges gauge and the log.
func (o Options) serve(ctx context.Context, r Range) {
	if ctx.Err() != nil {
		return // lost before it started
	}
	held.WithLabelValues(o.Identity).Inc()
	o.Log.Info("shard range acquired", "range", r.Label(), "lease", r.LeaseName(), "replica", o.Identity, "selector", r.Selector())
	start := time.Now()
	o.Serve(ctx, r)
	held.WithLabelValues(o.Identity).Dec()
	o.Log.Info("shard range lost: drained, releasing its Lease", "range", r.Label(), "lease", r.LeaseName(), "replica", o.Identity,
		"heldFor", time.Since(start).Round(time.Millisecond).String())
}

// release gives r's Lease up when this replica still holds it, as the
// elector's ReleaseOnCancel does, but after the range drained (the elector
// releases before its OnStoppedLeading): another replica takes it at its
// next retry instead of after the lease duration.
func (o Options) release(lock *trackedLock, r Range) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.RenewDeadline)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("release Lease %s/%s: %w", o.Namespace, r.LeaseName(), err)
	}
	if rec.HolderIdentity != o.Identity {
		return nil
	}
	now := metav1.Now()
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
	if err != nil {
		return fmt.Errorf("release Lease %s/%s: %w", o.Namespace, r.LeaseName(), err)
	}
	return nil
}

// trackedLock records whether this replica ever wrote itself holder: the
// elector then has started, or is about to start, OnStartedLeading. It
// shows a released Lease as held to a replica at its share (balance.gate).
type trackedLock struct {
	resourcelock.Interface
	identity string
	balance  *balance
	acquired atomic.Bool
}

func (l *trackedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	// Fenced (fence.go), the Lease looks held, unless this term holds it
	// (it renews until given up, then releases it): also when it names this
	// replica, left from a term before.
	holds := err == nil && rec.HolderIdentity == l.identity && l.acquired.Load()
	if (err == nil || apierrors.IsNotFound(err)) && !holds && l.balance.fenced() {
		rec, raw := l.balance.fencedRead()
		return rec, raw, nil
	}
	if err == nil {
		l.balance.gate(rec)
	}
	return rec, raw, err
}

func (l *trackedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, rec)
	l.note(rec, err)
	return err
}

func (l *trackedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, rec)
	l.note(rec, err)
	return err
}

func (l *trackedLock) note(rec resourcelock.LeaderElectionRecord, err error) {
	if err == nil && rec.HolderIdentity == l.identity {
		l.acquired.Store(true)
	}
}
