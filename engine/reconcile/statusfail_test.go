package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestStatusFailuresMove: the kind's state is told at the first outcome,
// when the first CR fails and when the last failing one is written, not
// at each failure or write between.
func TestStatusFailuresMove(t *testing.T) {
	var f statusFailures
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	for i, step := range []struct {
		key     types.NamespacedName
		err     string
		failing int
		first   string
		moved   bool
	}{
		{a, "", 0, "", true}, // first outcome: told
		{a, "", 0, "", false},
		{b, "refused", 1, "ns/b", true},
		{a, "refused too", 2, "ns/a", false},
		{b, "", 1, "ns/a", false},
		{a, "", 0, "", true},
	} {
		st, moved := f.set(step.key, step.err)
		if st.Failing != step.failing || st.First != step.first || moved != step.moved {
			t.Errorf("step %d: %+v, moved %v; want %d failing, first %q, moved %v", i, st, moved, step.failing, step.first, step.moved)
		}
	}
}
