package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/template"
)

// TestRolloutParkFreesSlot: CRs given the new revision that wait on a
// missing reference free their slots, so the rollout moves on to the next
// CRs instead of freezing with every slot held (issue 25, item 7).
func TestRolloutParkFreesSlot(t *testing.T) {
	r2 := &template.Kind{Revision: "r2"}
	ro := NewRollout(r2)
	ro.MaxInFlight = 2
	var woken []types.NamespacedName
	ro.OnWake = func(k types.NamespacedName) { woken = append(woken, k) }
	for i := range 4 {
		ro.Choose(key(i), "r1", false)
	}
	ro.Park(key(0), "r1")
	ro.Park(key(1), "r1")
	if len(woken) != 2 || woken[0] != key(2) || woken[1] != key(3) {
		t.Fatalf("woken %v, want cr-02 and cr-03 in the parked CRs' slots", woken)
	}
	if p := ro.Progress(); p.InFlight != 2 || p.Waiting != 0 || p.PerRevision["r1"] != 4 {
		t.Fatalf("progress %+v, want the 2 woken in flight, every CR still on r1", p)
	}
	// The reference appears: a parked CR comes back and waits its turn.
	if k := ro.Choose(key(0), "r1", false); k != nil {
		t.Fatalf("a parked CR over the budget got %v, want to wait", k)
	}
}

// TestRolloutDriftMovesWaitingCR: after a restart on a revision this
// process never served, a waiting CR is left alone, until a child of it is
// deleted by hand: then it moves at once, to be repaired at the new
// revision; a CR that is not waiting is not marked.
func TestRolloutDriftMovesWaitingCR(t *testing.T) {
	r2 := &template.Kind{Revision: "r2"}
	ro := NewRollout(r2)
	ro.MaxInFlight = 1
	ro.Choose(key(0), "r1", false)
	if k := ro.Choose(key(1), "r1", false); k != nil {
		t.Fatalf("cr-01 over the budget got %v, want nil", k)
	}
	ro.Drifted(key(1))
	if k := ro.Choose(key(1), "r1", false); k != r2 {
		t.Fatalf("a drifted waiting CR got %v, want r2 at once", k)
	}
	ro.Drifted(key(9)) // never chosen: nothing to remember
	if d := ro.keysOf(func(t *turn) bool { return t.drifted }); len(d) != 0 {
		t.Fatalf("drift marks left: %v", d)
	}
	ro.HaltAfter = 1
	ro.Done(key(0), r2, false, true)
	ro.Choose(key(2), "r1", false)
	ro.Drifted(key(2))
	if k := ro.Choose(key(2), "r1", false); k != nil {
		t.Fatalf("a halted rollout moved a drifted CR to %v", k)
	}
}
