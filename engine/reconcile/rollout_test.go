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

// TestRolloutChainedEdits edits A to B, then B to C while B rolls out: the
// CRs still on A wait on A (not moved to B at once), those on B wait on B,
// and the budget holds for C.
func TestRolloutChainedEdits(t *testing.T) {
	a, b, c := &template.Kind{Revision: "A"}, &template.Kind{Revision: "B"}, &template.Kind{Revision: "C"}
	ro := NewRollout(a)
	ro.MaxInFlight = 2
	for i := range 6 {
		ro.Done(key(i), a, true, false)
	}
	ro.SetKind(b)
	for i := range 2 {
		if k := ro.Choose(key(i), "A", false); k != b {
			t.Fatalf("cr-%02d within the budget got %v, want B", i, k)
		}
	}
	ro.Done(key(0), b, true, false) // cr-00 on B; its slot goes to cr-02 (woken)
	ro.SetKind(c)
	got := map[string]int{}
	for i := range 6 {
		rev := "A"
		if i == 0 {
			rev = "B"
		}
		if k := ro.Choose(key(i), rev, false); k != nil {
			got[k.Revision]++
		}
	}
	if got["C"] != 2 || got["B"] != 0 || got["A"] != 4 {
		t.Fatalf("after A to B to C with a budget of 2, rendered %v; want 2 on C, the other 4 on A (their own revision)", got)
	}
	// cr-00 was moved to C (first within budget); a CR on B over the
	// budget is rendered with B.
	if k := ro.Choose(key(9), "B", false); k != b {
		t.Fatalf("a waiting CR on B got %v, want B", k)
	}
	if p := ro.Progress(); p.InFlight != 2 || p.Waiting != 5 {
		t.Fatalf("progress %+v, want 2 in flight and 5 waiting", p)
	}
}

// TestRolloutWokenDeletedFreesSlot: a CR woken for a freed slot that turns
// out deleted frees the slot again, and the next waiting CR is woken.
func TestRolloutWokenDeletedFreesSlot(t *testing.T) {
	r1, r2 := &template.Kind{Revision: "r1"}, &template.Kind{Revision: "r2"}
	ro := NewRollout(r1)
	ro.MaxInFlight = 1
	var woken []types.NamespacedName
	ro.OnWake = func(k types.NamespacedName) { woken = append(woken, k) }
	for i := range 3 {
		ro.Done(key(i), r1, true, false)
	}
	ro.SetKind(r2)
	for i := range 3 {
		ro.Choose(key(i), "r1", false)
	}
	ro.Done(key(0), r2, true, false)
	if len(woken) != 1 || woken[0] != key(1) {
		t.Fatalf("woken %v, want cr-01", woken)
	}
	// A spec change of another waiting CR does not take the woken CR's slot.
	if k := ro.Choose(key(2), "r1", true); k != r1 {
		t.Fatalf("cr-02 took the slot given to cr-01: got %v, want r1", k)
	}
	ro.Forget(key(1)) // cr-01 was deleted before its turn came
	if len(woken) != 2 || woken[1] != key(2) {
		t.Fatalf("woken %v, want cr-02 after cr-01 turned out deleted", woken)
	}
	if k := ro.Choose(key(2), "r1", false); k != r2 {
		t.Fatalf("woken cr-02 got %v, want r2", k)
	}
}

// TestRolloutForgetsUnusedRevisions: a revision no CR is on any more is
// not kept (its compiled template is freed), but the current and the last
// good ones are.
func TestRolloutForgetsUnusedRevisions(t *testing.T) {
	ro := NewRollout(&template.Kind{Revision: "r0"})
	for i := 1; i <= 5; i++ {
		k := &template.Kind{Revision: fmt.Sprintf("r%d", i)}
		ro.SetKind(k)
		ro.Choose(key(0), "", false)
		ro.Done(key(0), k, true, false)
	}
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if len(ro.served) != 2 || ro.served["r5"] == nil || ro.served["r4"] == nil {
		t.Fatalf("served revisions %v, want r5 (current) and r4 (last good)", keys(ro.served))
	}
}

func keys(m map[string]*template.Kind) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
