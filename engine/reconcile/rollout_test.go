package reconcile

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/template"
)

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("cr-%02d", i)}
}

// TestRolloutAfterRestart is a process that starts on revision r2 while its
// CRs were last rendered with r1, which it never served: they move within
// the budget, the others are left alone (Choose returns nil) until a slot
// frees, and a halt leaves them alone for good.
func TestRolloutAfterRestart(t *testing.T) {
	r2 := &template.Kind{Revision: "r2"}
	ro := NewRollout(r2)
	ro.MaxInFlight = 2
	var woken []types.NamespacedName
	ro.OnWake = func(k types.NamespacedName) { woken = append(woken, k) }

	if k := ro.Choose(key(9), "", true); k != r2 {
		t.Fatal("a new CR is not rendered with the current revision")
	}
	for i := range 2 {
		if k := ro.Choose(key(i), "r1", false); k != r2 {
			t.Fatalf("cr-%02d within the budget: got %v, want r2", i, k)
		}
	}
	for i := 2; i < 5; i++ {
		if k := ro.Choose(key(i), "r1", false); k != nil {
			t.Fatalf("cr-%02d over the budget: got %s, want nil (left alone)", i, k.Revision)
		}
	}
	if p := ro.Progress(); p.InFlight != 2 || p.Waiting != 3 || p.PerRevision["r1"] != 3 {
		t.Fatalf("progress %+v, want 2 in flight, 3 waiting on r1", p)
	}
	// A waiting CR whose spec changed moves at once.
	if k := ro.Choose(key(4), "r1", true); k != r2 {
		t.Fatal("a spec change of a waiting CR was held back")
	}
	// A converged CR frees its slot: the first waiting CR is woken.
	ro.Done(key(0), r2, true, false)
	if len(woken) != 1 || woken[0] != key(2) {
		t.Fatalf("woken %v, want cr-02", woken)
	}
	// Stalled CRs halt the rollout (here after 2): the waiting ones stay
	// alone, even when their spec changes.
	ro.HaltAfter = 2
	for _, i := range []int{1, 4} {
		ro.Done(key(i), r2, false, true)
	}
	if !ro.Progress().Halted {
		t.Fatal("rollout not halted after 2 stalled CRs")
	}
	if k := ro.Choose(key(3), "r1", true); k != nil {
		t.Fatalf("a halted rollout moved cr-03 to %s", k.Revision)
	}
	// A fixed revision resumes: it has no previous revision to fall back on
	// either, so the budget still applies.
	r3 := &template.Kind{Revision: "r3"}
	ro.SetKind(r3)
	if k := ro.Choose(key(3), "r1", false); k != r3 {
		t.Fatalf("after the fix cr-03 got %v, want r3", k)
	}
}

// TestRolloutKnownPrevious is a rollout within one process: a CR over the
// budget is rendered with the previous revision.
func TestRolloutKnownPrevious(t *testing.T) {
	r1, r2 := &template.Kind{Revision: "r1"}, &template.Kind{Revision: "r2"}
	ro := NewRollout(r1)
	ro.MaxInFlight = 1
	ro.SetKind(r2)
	if k := ro.Choose(key(0), "r1", false); k != r2 {
		t.Fatal("first CR not moved")
	}
	if k := ro.Choose(key(1), "r1", false); k != r1 {
		t.Fatalf("CR over the budget got %v, want the previous revision", k)
	}
	if k := ro.Choose(key(1), "r1", true); k != r1 {
		t.Fatalf("spec change over the budget got %v, want the previous revision", k)
	}
}
