package reconcile

import (
	"encoding/json"
	"testing"

	"github.com/cueop/cueop/engine/wellknown"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestFinalizerOps: one patch adds both finalizers, or removes both,
// leaving the others (the user's orphan) alone; nothing to change is no
// patch.
func TestFinalizerOps(t *testing.T) {
	cr := func(fins ...string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetUID("u")
		o.SetResourceVersion("7")
		o.SetFinalizers(fins)
		return o
	}
	both := map[string]bool{wellknown.FinalizerRetain: true, wellknown.FinalizerOrdered: true}
	for name, tc := range map[string]struct {
		cr   *unstructured.Unstructured
		want map[string]bool
		ops  string
	}{
		"add both to none": {cr(), both,
			`[{"op":"test","path":"/metadata/uid","value":"u"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers","value":["cueop.dev/retain","cueop.dev/ordered-deletion"]}]`},
		"add both beside another": {cr("x"), both,
			`[{"op":"test","path":"/metadata/uid","value":"u"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers/-","value":"cueop.dev/retain"},{"op":"add","path":"/metadata/finalizers/-","value":"cueop.dev/ordered-deletion"}]`},
		"remove both, keep orphan": {cr(wellknown.FinalizerRetain, "orphan", wellknown.FinalizerOrdered), noFinalizers,
			`[{"op":"test","path":"/metadata/uid","value":"u"},{"op":"test","path":"/metadata/finalizers/2","value":"cueop.dev/ordered-deletion"},{"op":"remove","path":"/metadata/finalizers/2"},{"op":"test","path":"/metadata/finalizers/0","value":"cueop.dev/retain"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		"swap one for the other": {cr(wellknown.FinalizerRetain), map[string]bool{wellknown.FinalizerRetain: false, wellknown.FinalizerOrdered: true},
			`[{"op":"test","path":"/metadata/uid","value":"u"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"test","path":"/metadata/finalizers/0","value":"cueop.dev/retain"},{"op":"remove","path":"/metadata/finalizers/0"},{"op":"add","path":"/metadata/finalizers/-","value":"cueop.dev/ordered-deletion"}]`},
		"in line":     {cr(wellknown.FinalizerOrdered), map[string]bool{wellknown.FinalizerRetain: false, wellknown.FinalizerOrdered: true}, `null`},
		"not cueop's": {cr("orphan"), noFinalizers, `null`},
	} {
		got, err := json.Marshal(finalizerOps(tc.cr, tc.want))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.ops {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.ops)
		}
	}
}

// TestFinalizedCRs: a CR being deleted whose last finalizer cueop took off
// is done for its uid, whatever resourceVersion a lagging cache shows; a CR
// of the same name with another uid, or the CR gone, forgets it.
func TestFinalizedCRs(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "d"}
	cr := func(uid string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetUID(types.UID(uid))
		return o
	}
	var f crs
	if f.finalized(key, cr("a")) {
		t.Error("done before any write")
	}
	f.finalizedDone(key, "a")
	if !f.finalized(key, cr("a")) || !f.finalized(key, cr("a")) {
		t.Error("the finalized CR is not done")
	}
	if f.finalized(key, cr("b")) {
		t.Error("a new CR of the same name is done")
	}
	if f.finalized(key, cr("a")) {
		t.Error("still done after another uid was seen")
	}
	f.finalizedDone(key, "a")
	f.forget(key, true)
	if f.finalized(key, cr("a")) {
		t.Error("done after forget")
	}
}
