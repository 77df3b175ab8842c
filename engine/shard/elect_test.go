package shard_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The timing of the test's Leases: a holder cut off from the API server
// stops serving after renewDeadline, 2 s before another may take the range.
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// serving checks that no range is served by two replicas at once, nor
// ranges of two shard counts (which overlap).
type serving struct {
	t      *testing.T
	mu     sync.Mutex
	active map[shard.Range]string // range → replica serving it
}

func (s *serving) serve(id string) func(ctx context.Context, r shard.Range) {
	return func(ctx context.Context, r shard.Range) {
		s.mu.Lock()
		for other, by := range s.active {
			switch {
			case other == r:
				s.t.Errorf("range %s served by %s while %s still serves it", r, id, by)
			case other.Count != r.Count:
				s.t.Errorf("range %s served by %s while %s serves range %s of another shard count", r, id, by, other)
			}
		}
		s.active[r] = id
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		delete(s.active, r)
		s.mu.Unlock()
	}
}

// replica is one shard.Run whose connection to the API server can be cut.
type replica struct {
	cut  testkit.Cut
	stop func()
}

func startReplica(t *testing.T, ns, id string, shards int, s *serving) *replica {
	t.Helper()
	return startReplicaWith(t, ns, id, shards, s, func(*shard.Options) {})
}

// startReplicaWith is startReplica with its options changed by change.
func startReplicaWith(t *testing.T, ns, id string, shards int, s *serving, change func(*shard.Options)) *replica {
	t.Helper()
	r := &replica{}
	cfg := clustertest.Config()
	cfg.Wrap(r.cut.Wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := shard.Options{
		Leases: cs.CoordinationV1(), Namespace: ns, Identity: id, Shards: shards,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Serve: s.serve(id), Log: testr.New(t).WithName(id),
	}
	change(&opts)
	go func() { done <- shard.Run(ctx, opts) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

// waitHolders watches the namespace's Leases until want says yes to their
// holders (Lease name → holder identity).
func waitHolders(t *testing.T, ns string, timeout time.Duration, want func(map[string]string) bool) {
	t.Helper()
	waitLeases(t, ns, timeout, func(leases map[string]*coordinationv1.Lease) bool {
		holders := map[string]string{}
		for name, l := range leases {
			if l.Spec.HolderIdentity != nil {
				holders[name] = *l.Spec.HolderIdentity
			}
		}
		return want(holders)
	})
}

// waitLeases watches the namespace's Leases until want says yes to them
// (by name); it is called on every change.
func waitLeases(t *testing.T, ns string, timeout time.Duration, want func(map[string]*coordinationv1.Lease) bool) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoordinationV1().Leases(ns).Watch(ctx, o)
		},
	}
	leases := map[string]*coordinationv1.Lease{}
	_, err = watchtools.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, func(store toolscache.Store) (bool, error) {
		for _, o := range store.List() {
			l := o.(*coordinationv1.Lease)
			leases[l.Name] = l
		}
		return want(leases), nil
	}, func(ev watch.Event) (bool, error) {
		if l, ok := ev.Object.(*coordinationv1.Lease); ok {
			if ev.Type == watch.Deleted {
				delete(leases, l.Name)
			} else {
				leases[l.Name] = l
			}
		}
		return want(leases), nil
	})
	if err != nil {
		holders := map[string]string{}
		for name, l := range leases {
			if l.Spec.HolderIdentity != nil {
				holders[name] = *l.Spec.HolderIdentity
			}
		}
		t.Fatalf("Lease holders %v: %v", holders, err)
	}
}

func heldBy(id string, leases ...string) func(map[string]string) bool {
	return func(h map[string]string) bool {
		for _, l := range leases {
			if h[l] != id {
				return false
			}
		}
		return true
	}
}

// oneEach is true when each of ids holds one of leases.
func oneEach(leases []string, ids ...string) func(map[string]string) bool {
	return func(h map[string]string) bool {
		count := map[string]int{}
		for _, l := range leases {
			count[h[l]]++
		}
		for _, id := range ids {
			if count[id] != 1 {
				return false
			}
		}
		return true
	}
}

// A replica alone takes every range; a second one gets its share (the
// first gives a range up, drained, and the second takes it); one cut off
// from the API server stops serving before its Leases expire, and another
// takes its ranges once they do; a replica that stops drains and releases
// its Leases, and another takes them at its next retry.
func TestRangesHandOver(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	s := &serving{t: t, active: map[shard.Range]string{}}
	leases := []string{"cueop-shard-0-of-2", "cueop-shard-1-of-2"}

	a := startReplica(t, ns, "a", 2, s)
	waitHolders(t, ns, 30*time.Second, heldBy("a", leases...))
	start := time.Now()
	b := startReplica(t, ns, "b", 2, s)
	waitHolders(t, ns, 30*time.Second, oneEach(leases, "a", "b"))
	t.Logf("ranges balanced %s after the second replica started", time.Since(start).Round(100*time.Millisecond))

	a.cut.Store(true)
	cut := time.Now()
	waitHolders(t, ns, 30*time.Second, heldBy("b", leases...))
	took := time.Since(cut)
	t.Logf("ranges taken over %s after their holder was cut off (lease %s)", took.Round(100*time.Millisecond), leaseDuration)
	// The lease + 5 s target is measured by make bench-shards; here,
	// under -race on a loaded machine, the bound only rules out waiting
	// for a second lease duration or more.
	if limit := 2*leaseDuration + 10*time.Second; took > limit {
		t.Errorf("takeover took %s, want within %s", took.Round(100*time.Millisecond), limit)
	}
	a.stop()

	startReplica(t, ns, "c", 2, s)
	waitHolders(t, ns, 30*time.Second, oneEach(leases, "b", "c"))
	b.stop()
	stopped := time.Now()
	waitHolders(t, ns, 30*time.Second, heldBy("c", leases...))
	took = time.Since(stopped)
	t.Logf("ranges taken over %s after their holder stopped", took.Round(100*time.Millisecond))
	// Released, not expired: taken at c's next retry.
	if took >= leaseDuration {
		t.Errorf("takeover after a stop took %s, want less than the lease duration %s: Leases not released", took.Round(100*time.Millisecond), leaseDuration)
	}
}
