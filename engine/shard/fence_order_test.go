package shard

import (
	"strconv"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lease is a Lease named name, created at created, held by holder and
// renewed at renewed for 10 s, with labels.
func lease(name string, created, renewed time.Time, labels map[string]string) coordinationv1.Lease {
	holder, secs, rt := "h-"+name, int32(10), metav1.NewMicroTime(renewed)
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Labels: labels},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &rt},
	}
}

func memberOf(name string, created time.Time, shards int, now time.Time) coordinationv1.Lease {
	labels := map[string]string{wellknown.LabelShardMember: ""}
	if shards > 0 {
		labels[wellknown.LabelShards] = strconv.Itoa(shards)
	}
	return lease(name, created, now, labels)
}

// The order of the fence: who joined first (then the name, for members
// created in the same second) serves; a member without a shard count
// counts as another count; an expired member or range Lease fences no
// one; the share counts the unfenced members only.
func TestFenceOrder(t *testing.T) {
	now := time.Now()
	t0, t1 := now.Add(-time.Minute), now.Add(-30*time.Second)
	expired := now.Add(-time.Hour)
	for _, c := range []struct {
		name    string
		self    string
		shards  int
		members []coordinationv1.Lease
		ranges  []coordinationv1.Lease
		fenced  bool
		count   int
	}{
		{"alone", "a", 2, []coordinationv1.Lease{memberOf("a", t0, 2, now)}, nil, false, 1},
		{"not live yet: it joins now", "a", 2, nil, nil, false, 1},
		{"not live yet, beside one of its count", "a", 2, []coordinationv1.Lease{memberOf("b", t0, 2, now)}, nil, false, 2},
		{"not live yet, another count live", "a", 2, []coordinationv1.Lease{memberOf("b", t0, 3, now)}, nil, true, 0},
		{"old count first", "new", 3, []coordinationv1.Lease{memberOf("old", t0, 2, now), memberOf("new", t1, 3, now)}, nil, true, 0},
		{"old count first, seen by the old", "old", 2, []coordinationv1.Lease{memberOf("old", t0, 2, now), memberOf("new", t1, 3, now)}, nil, false, 1},
		{"same second: the name decides", "b", 3, []coordinationv1.Lease{memberOf("a", t0, 2, now), memberOf("b", t0, 3, now)}, nil, true, 0},
		{"same second, seen by the first", "a", 2, []coordinationv1.Lease{memberOf("a", t0, 2, now), memberOf("b", t0, 3, now)}, nil, false, 1},
		{"no shard count", "new", 2, []coordinationv1.Lease{memberOf("old", t0, 0, now), memberOf("new", t1, 2, now)}, nil, true, 0},
		{"the old count's member expired", "new", 3, []coordinationv1.Lease{lease("old", t0, expired, map[string]string{wellknown.LabelShards: "2"}), memberOf("new", t1, 3, now)}, nil, false, 1},
		{"a range of the old count held", "new", 3, []coordinationv1.Lease{memberOf("new", t1, 3, now)},
			[]coordinationv1.Lease{lease("cueop-shard-0-of-2", t0, now, map[string]string{wellknown.LabelShard: "0-of-2"})}, true, 0},
		{"a range of the old count expired", "new", 3, []coordinationv1.Lease{memberOf("new", t1, 3, now)},
			[]coordinationv1.Lease{lease("cueop-shard-0-of-2", t0, expired, map[string]string{wellknown.LabelShard: "0-of-2"})}, false, 1},
		{"a fence Lease held", "a", 2, []coordinationv1.Lease{memberOf("a", t0, 2, now)},
			[]coordinationv1.Lease{lease("cueop-leader", t0, now, nil)}, true, 0},
		{"a later member of the same count behind one of another", "c", 2,
			[]coordinationv1.Lease{memberOf("a", t0, 2, now), memberOf("b", t1, 3, now), memberOf("c", now, 2, now)}, nil, true, 0},
		{"the share counts the unfenced", "a", 2,
			[]coordinationv1.Lease{memberOf("a", t0, 2, now), memberOf("b", t1, 3, now), memberOf("c", now, 2, now)}, nil, false, 1},
	} {
		st := fence(c.self, c.shards, c.members, c.ranges, now)
		if st.fenced != c.fenced || st.members != c.count {
			t.Errorf("%s: fenced %v (by %s), members %d; want fenced %v, members %d", c.name, st.fenced, st.by, st.members, c.fenced, c.count)
		}
	}
}
