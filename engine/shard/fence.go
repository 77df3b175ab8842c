package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Fence. Replicas run with different shard counts while --shards changes
// (a rolling update runs the old and the new replicas at once): their
// ranges are Leases of different names (cueop-shard-<i>-of-<N>), so
// without a fence each CR would be served by one replica of each count,
// its children's wellknown.LabelShard relabelled back and forth, and the storage
// migration run by both holders of a range 0. One count serves at a time:
//   - each member Lease carries its replica's count (wellknown.LabelShards); the
//     live members are ordered by when they joined (creation of the
//     member Lease, then its name), and a replica is fenced while a live
//     member with another count joined before it: the replicas serving
//     keep serving, and those of the new count wait until the last
//     replica of the old count is gone;
//   - a replica is also fenced while a range Lease of another count is
//     held and not expired: its holder may still be serving it (a replica
//     of the old count drains its ranges before it releases them, and
//     after its member Lease is gone), or run a release without the
//     fence;
//   - a fenced replica gives up every range it holds (drained, then
//     released), takes none, and counts for no share; it stays ready (its
//     probes do not depend on the ranges), so a rolling update goes on;
//   - a replica whose member Lease expired (cut off from the API server)
//     joins anew when it renews it: it does not take precedence over the
//     replicas that took its ranges meanwhile.
// A member Lease without LabelShards (a replica without the fence) counts
// as another count. Liveness compares a Lease's renewTime with the local
// clock, as the member count does.

// fencedHolder is the holder a fenced replica sees in a range Lease it
// does not hold: the elector takes it for held by another and does not try
// to take it.
const fencedHolder = "(fenced: replicas of another shard count serve)"

// live tells whether l is held and not expired at now.
func live(l *coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil || s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return false
	}
	return s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second).After(now)
}

// shardsOf is the shard count a member Lease carries, 0 when none.
func shardsOf(l *coordinationv1.Lease) int {
	n, err := strconv.Atoi(l.Labels[wellknown.LabelShards])
	if err != nil {
		return 0
	}
	return n
}

// rangeCount is the count of a range Lease's range (its wellknown.LabelShard,
// <i>-of-<N>), 0 when it has none.
func rangeCount(l *coordinationv1.Lease) int {
	_, n, ok := strings.Cut(l.Labels[wellknown.LabelShard], "-of-")
	if !ok {
		return 0
	}
	c, err := strconv.Atoi(n)
	if err != nil {
		return 0
	}
	return c
}

// fenceState is what a replica makes of the Leases: whether it is fenced
// (and by which Lease), and how many live members share its ranges.
type fenceState struct {
	fenced  bool
	by      string // the Lease that fences it
	members int    // live unfenced members of its count, itself included
}

// fence decides the state of the replica whose member Lease is self, with
// shards ranges, from the namespace's member and range Leases at now.
func fence(self string, shards int, members, ranges []coordinationv1.Lease, now time.Time) fenceState {
	var joined []*coordinationv1.Lease
	for i := range members {
		if live(&members[i], now) {
			joined = append(joined, &members[i])
		}
	}
	slices.SortFunc(joined, func(a, b *coordinationv1.Lease) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	// The unfenced members are those that joined before any live member
	// of another count: a prefix of the order.
	prefix := len(joined)
	for i, m := range joined {
		if shardsOf(m) != shardsOf(joined[0]) {
			prefix = i
			break
		}
	}
	me := slices.IndexFunc(joined, func(m *coordinationv1.Lease) bool { return m.Name == self })
	if me < 0 {
		// Not live (not written yet, or expired): it joins now, last.
		joined = append(joined, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: self, Labels: map[string]string{wellknown.LabelShards: strconv.Itoa(shards)}}})
		me = len(joined) - 1
		if prefix == me && shardsOf(joined[0]) == shards {
			prefix++
		}
	}
	if shardsOf(joined[me]) != shards {
		return fenceState{fenced: true, by: "its own member Lease " + self + " (without its shard count yet)"}
	}
	for _, m := range joined[:me] {
		if shardsOf(m) != shards {
			return fenceState{fenced: true, by: fmt.Sprintf("member Lease %s (%s shards), joined before it", m.Name, countOf(m))}
		}
	}
	for i := range ranges {
		if rangeCount(&ranges[i]) != shards && live(&ranges[i], now) {
			return fenceState{fenced: true, by: fmt.Sprintf("range Lease %s, held by %s", ranges[i].Name, *ranges[i].Spec.HolderIdentity)}
		}
	}
	return fenceState{members: prefix}
}

func countOf(l *coordinationv1.Lease) string {
	if n := shardsOf(l); n > 0 {
		return strconv.Itoa(n)
	}
	return "unknown"
}

// fencedRecord is the record a fenced replica's elector gets for a range
// Lease it does not hold; raw differs on every read, so that the elector
// sees it renewed and keeps waiting.
func fencedRecord(leaseDuration time.Duration, reads uint64) (*resourcelock.LeaderElectionRecord, []byte) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: fencedHolder, LeaseDurationSeconds: int(leaseDuration / time.Second)},
		[]byte(fmt.Sprintf("%s %d", fencedHolder, reads))
}
