package apply_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
)

// TestMemoFollowsAppliedEntry: with fieldsV1 as the operator's cache keeps
// it (text), a child found in sync stays in sync while another manager
// changes what cueop does not own, and needs the apply again as soon as
// another manager takes or removes a field cueop set, though the memo
// holds a verdict for the same desired object and the same uid.
func TestMemoFollowsAppliedEntry(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := rendered(t, e.ns, "r")["pod-0"]
	e.mustApply(t, a, desired, apply.Created)
	needs := func(want bool) {
		t.Helper()
		live := fieldsAsText(t, e.live(t, desired))
		got, why, err := a.NeedsApply(desired, live)
		if err != nil || got != want {
			t.Fatalf("NeedsApply at resourceVersion %s = %v (%s), %v; want %v", live.GetResourceVersion(), got, why, err, want)
		}
		if !want {
			n := e.requests.Len()
			if action, err := a.Apply(context.Background(), desired, live); err != nil || action != apply.Unchanged {
				t.Fatalf("Apply = %s, %v; want unchanged", action, err)
			}
			if sent := e.requests.Len() - n; sent != 0 {
				t.Fatalf("an unchanged Apply sent %d requests", sent)
			}
		}
	}
	needs(false)

	// Another manager's label: a new resourceVersion, cueop's entry as it was.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		labels := live.GetLabels()
		labels["team"] = "storage"
		live.SetLabels(labels)
	})
	needs(false)

	// Another manager changes a label cueop set: the field is theirs now.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		labels := live.GetLabels()
		labels["app"] = "edited"
		live.SetLabels(labels)
	})
	needs(true)
	e.mustApply(t, a, desired, apply.Updated)
	needs(false)

	// Another manager removes a label cueop set.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		labels := live.GetLabels()
		delete(labels, "app")
		live.SetLabels(labels)
	})
	needs(true)
	e.mustApply(t, a, desired, apply.Updated)
	needs(false)
}
