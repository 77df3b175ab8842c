package shard_test

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// rangeLeases are the Lease names of the n ranges.
func rangeLeases(n int) []string {
	var out []string
	for _, r := range shard.Ranges(n) {
		out = append(out, r.LeaseName())
	}
	return out
}

// member is the member Lease of replica id among leases, nil when none.
func member(leases map[string]*coordinationv1.Lease, id string) *coordinationv1.Lease {
	for _, l := range leases {
		if _, ok := l.Labels[wellknown.LabelShardMember]; ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == id {
			return l
		}
	}
	return nil
}

// renewals waits until replica id renewed its member Lease (of uid other
// than not, when set) times times, and checks on every change of the
// namespace's Leases meanwhile that the ranges keep is holds (range Lease
// → holder) stay held by them.
func renewals(t *testing.T, ns, id string, not types.UID, times int, keep map[string]string) *coordinationv1.Lease {
	t.Helper()
	seen := map[string]bool{}
	var last *coordinationv1.Lease
	waitLeases(t, ns, 30*time.Second, func(leases map[string]*coordinationv1.Lease) bool {
		for name, holder := range keep {
			if l := leases[name]; l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder {
				t.Fatalf("range Lease %s no longer held by %s while %s renewed its member Lease", name, holder, id)
			}
		}
		m := member(leases, id)
		if m == nil || m.UID == not {
			return false
		}
		if got := m.Labels[wellknown.LabelShards]; got == "" {
			t.Fatalf("member Lease %s of %s: no %s label", m.Name, id, wellknown.LabelShards)
		}
		seen[m.ResourceVersion], last = true, m
		return len(seen) >= times
	})
	return last
}

// A replica started with another shard count (a rolling update that
// changes --shards) takes no range while the replica of the old count
// serves, though their ranges' Leases differ; it takes every range of its
// count once the old replica stops. No two counts are served at once.
func TestShardCountChangeIsFenced(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	s := &serving{t: t, active: map[shard.Range]string{}}
	old2, new3 := rangeLeases(2), rangeLeases(3)

	old := startReplica(t, ns, "old", 2, s)
	waitHolders(t, ns, 30*time.Second, heldBy("old", old2...))
	startReplica(t, ns, "new", 3, s)
	// Three renewals of its member Lease: three member counts, and as
	// many retries of each range Lease, with the old replica's ranges
	// held by it throughout.
	renewals(t, ns, "new", "", 3, map[string]string{old2[0]: "old", old2[1]: "old"})
	waitHolders(t, ns, time.Second, func(h map[string]string) bool {
		for _, l := range new3 {
			if h[l] != "" {
				t.Fatalf("range Lease %s held by %s while the replica of 2 shards serves", l, h[l])
			}
		}
		return true
	})

	old.stop()
	stopped := time.Now()
	waitHolders(t, ns, 30*time.Second, heldBy("new", new3...))
	took := time.Since(stopped)
	t.Logf("the replica of 3 shards took every range %s after the one of 2 stopped", took.Round(100*time.Millisecond))
	// Released, not expired: taken at the next retries.
	if took >= leaseDuration {
		t.Errorf("takeover after the old count stopped took %s, want less than the lease duration %s", took.Round(100*time.Millisecond), leaseDuration)
	}
}

// A replica of the old count cut off from the API server long enough that
// its Leases expire loses its ranges to the replica of the new count; when
// it comes back it joins anew, after that replica: it is fenced, and the
// new count keeps every range.
func TestShardCountRejoinAfterCutOff(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	s := &serving{t: t, active: map[shard.Range]string{}}
	old2, new3 := rangeLeases(2), rangeLeases(3)

	old := startReplica(t, ns, "old", 2, s)
	waitHolders(t, ns, 30*time.Second, heldBy("old", old2...))
	startReplica(t, ns, "new", 3, s)
	renewals(t, ns, "new", "", 2, map[string]string{old2[0]: "old", old2[1]: "old"})
	var was types.UID
	waitLeases(t, ns, time.Second, func(leases map[string]*coordinationv1.Lease) bool {
		if m := member(leases, "old"); m != nil {
			was = m.UID
		}
		return true
	})

	old.cut.Store(true)
	cut := time.Now()
	waitHolders(t, ns, 30*time.Second, heldBy("new", new3...))
	t.Logf("the replica of 3 shards took every range %s after the one of 2 was cut off (lease %s)",
		time.Since(cut).Round(100*time.Millisecond), leaseDuration)

	old.cut.Store(false)
	keep := map[string]string{new3[0]: "new", new3[1]: "new", new3[2]: "new"}
	renewals(t, ns, "old", was, 3, keep)
}

// A sharded replica takes no range while the leader election Lease of an
// unsharded cueop (Options.Fence) is held: switching a Deployment from
// --leader-elect to --shards N, the new replicas wait for the leader to
// go; once it released its Lease, they take every range.
func TestShardedWaitsForTheUnshardedLeader(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	s := &serving{t: t, active: map[shard.Range]string{}}
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	leases := cs.CoordinationV1().Leases(ns)
	holder, secs, now := "leader", int32(leaseDuration/time.Second), metav1.NewMicroTime(time.Now())
	leader, err := leases.Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "cueop-leader"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	startReplicaWith(t, ns, "sharded", 2, s, func(o *shard.Options) { o.Fence = []string{"cueop-leader"} })
	renewals(t, ns, "sharded", "", 3, map[string]string{"cueop-leader": "leader"})
	waitHolders(t, ns, time.Second, func(h map[string]string) bool {
		for _, l := range rangeLeases(2) {
			if h[l] != "" {
				t.Fatalf("range Lease %s held by %s while the unsharded leader holds its Lease", l, h[l])
			}
		}
		return true
	})

	released := ""
	leader.Spec.HolderIdentity = &released
	if _, err := leases.Update(t.Context(), leader, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHolders(t, ns, 30*time.Second, heldBy("sharded", rangeLeases(2)...))
}
