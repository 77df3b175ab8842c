package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Balance. Without a coordinator, the first replica to start would take
// every range. Each replica therefore renews a member Lease of its own
// (wellknown.LabelShardMember), counts the live members M, and aims at its fair share
// f = ceil(N/M) of the N ranges:
//   - a replica holding more than f gives one range up at a time (drained,
//     then released), and waits for another to take it before it gives up
//     the next;
//   - a replica holding f or more leaves a released range to the others
//     for a lease duration before it may take it back.
// A range whose holder died (its Lease expires, not released) is taken by
// whichever replica comes first, and the balance is restored afterwards.

// gated is the holder a replica at its fair share sees in a released
// Lease: the elector then takes it for held, and tries again once the lease
// duration has passed.
const gated = "(left to replicas below their share)"

// memberLeaseName is the name of the member Lease of identity.
func memberLeaseName(identity string) string {
	h := fnv.New64a()
	h.Write([]byte(identity))
	return fmt.Sprintf("cueop-shard-member-%016x", h.Sum64())
}

// balance is a replica's view of its share.
type balance struct {
	o Options

	mu      sync.Mutex
	held    map[int]context.CancelFunc // ranges held → gives the range up
	members int                        // live members, this one included
	shed    time.Time                  // when the last range was given up
	shedIdx int
	fence   fenceState // fenced until the first count (fence.go)
	counted time.Time  // when fence was decided
	reads   uint64     // range Lease reads while fenced (fencedRecord)
}

func newBalance(o Options) *balance {
	return &balance{o: o, held: map[int]context.CancelFunc{}, members: 1, shedIdx: -1,
		fence: fenceState{fenced: true, by: "no member count yet"}}
}

// share is the fair share of the ranges. The caller holds b.mu.
func (b *balance) share() int {
	m := max(b.members, 1)
	return (b.o.Shards + m - 1) / m
}

// atShare tells whether the replica holds its fair share or more.
func (b *balance) atShare() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held) >= b.share()
}

func (b *balance) acquired(r Range, giveUp context.CancelFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[r.Index] = giveUp
	if b.fencedLocked() {
		giveUp() // fenced since the elector read the Lease
	}
}

func (b *balance) lost(r Range) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, r.Index)
}

// run renews the member Lease, counts the members and gives a range up
// when the replica holds more than its share, every retry period until ctx
// is done; then it releases the member Lease. It closes counted after the
// first round.
func (b *balance) run(ctx context.Context, counted chan<- struct{}) {
	leases := b.o.Leases.Leases(b.o.Namespace)
	name := memberLeaseName(b.o.Identity)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.o.RenewDeadline)
		defer cancel()
		_ = leases.Delete(ctx, name, metav1.DeleteOptions{})
	}()
	tick := time.NewTicker(b.o.RetryPeriod)
	defer tick.Stop()
	for {
		if err := b.renew(ctx, name); err != nil && ctx.Err() == nil {
			b.o.Log.Error(err, "shard member Lease", "lease", name)
		}
		if err := b.count(ctx); err != nil && ctx.Err() == nil {
			b.o.Log.Error(err, "count shard members")
		}
		b.rebalance(ctx)
		if counted != nil {
			close(counted) // the ranges are competed for from now on
			counted = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renew creates or renews the replica's member Lease. It lasts the renew
// deadline, not the lease duration: a replica that could not renew it for
// that long serves no range any more, and no longer counts as a member
// before its ranges' Leases expire, so that the replica that takes them
// does not find itself above its share and give one up again.
func (b *balance) renew(ctx context.Context, name string) error {
	leases := b.o.Leases.Leases(b.o.Namespace)
	now := metav1.NewMicroTime(time.Now())
	secs := max(int32(b.o.RenewDeadline/time.Second), 1)
	shards := strconv.Itoa(b.o.Shards)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err == nil && !live(l, now.Time) {
		// Expired: join anew, after the members that stayed live (fence.go).
		err = leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
		if err == nil || apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
		}
	}
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.o.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "cueop", wellknown.LabelShardMember: "", wellknown.LabelShards: shards}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &b.o.Identity, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[wellknown.LabelShards] = shards
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &b.o.Identity, &secs, &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// count counts the live members of the replica's shard count, decides
// whether it is fenced (fence.go), and deletes member Leases long expired
// (of replicas that died).
func (b *balance) count(ctx context.Context) error {
	leases := b.o.Leases.Leases(b.o.Namespace)
	// One read of the namespace's Leases, as the member count alone cost.
	all, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var members, ranges []coordinationv1.Lease
	for _, l := range all.Items {
		_, member := l.Labels[wellknown.LabelShardMember]
		_, rng := l.Labels[wellknown.LabelShard]
		switch {
		case member:
			members = append(members, l)
		case rng, slices.Contains(b.o.Fence, l.Name): // a fence Lease is of no shard count
			ranges = append(ranges, l)
		}
	}
	now := time.Now()
	for _, l := range members {
		s := l.Spec
		if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
			continue
		}
		expires := s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
		if now.Sub(expires) > 10*b.o.LeaseDuration {
			_ = leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
		}
	}
	st := fence(memberLeaseName(b.o.Identity), b.o.Shards, members, ranges, now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if st.fenced != b.fence.fenced {
		if st.fenced {
			b.o.Log.Info("shard ranges fenced: replicas of another shard count serve; giving up every range held, taking none",
				"replica", b.o.Identity, "shards", b.o.Shards, "by", st.by, "held", len(b.held))
		} else {
			b.o.Log.Info("shard ranges unfenced: no replica of another shard count serves", "replica", b.o.Identity, "shards", b.o.Shards)
		}
		setFenced(b.o.Identity, st.fenced)
	}
	b.fence, b.counted = st, time.Now()
	if !st.fenced {
		b.members = max(st.members, 1)
	}
	return nil
}

// fenced tells whether the replica takes no range (fence.go).
func (b *balance) fenced() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fencedLocked()
}

// fencedLocked is fenced for a caller that holds b.mu: a replica that has
// not counted the members for the renew deadline (cut off from the API
// server) does not know it is not, and is.
func (b *balance) fencedLocked() bool {
	return b.fence.fenced || time.Since(b.counted) > b.o.RenewDeadline
}

// fencedRead is the record a fenced replica's elector reads for a Lease it
// does not hold.
func (b *balance) fencedRead() (*resourcelock.LeaderElectionRecord, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads++
	return fencedRecord(b.o.LeaseDuration, b.reads)
}

// rebalance gives the highest range held up when the replica holds more
// than its share, one at a time: the next only once the last was taken by
// another replica or a lease duration has passed.
func (b *balance) rebalance(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fencedLocked() {
		for _, giveUp := range b.held {
			giveUp()
		}
		return
	}
	if len(b.held) <= b.share() {
		return
	}
	if b.shedIdx >= 0 && time.Since(b.shed) < b.o.LeaseDuration {
		lease, err := b.o.Leases.Leases(b.o.Namespace).Get(ctx, Range{b.shedIdx, b.o.Shards}.LeaseName(), metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || *lease.Spec.HolderIdentity == b.o.Identity {
			return // not taken by another replica yet (or still draining here)
		}
	}
	top := -1
	for i := range b.held {
		top = max(top, i)
	}
	b.o.Log.Info("shard range given up: the replica holds more than its share", "range", Range{top, b.o.Shards}.Label(),
		"held", len(b.held), "share", b.share(), "members", b.members, "replica", b.o.Identity)
	b.held[top]()
	b.shed, b.shedIdx = time.Now(), top
}

// gate makes a released Lease look held to a replica at its share (see
// gated).
func (b *balance) gate(rec *resourcelock.LeaderElectionRecord) {
	if rec != nil && rec.HolderIdentity == "" && b.atShare() {
		rec.HolderIdentity = gated
		rec.LeaseDurationSeconds = int(b.o.LeaseDuration / time.Second)
	}
}
