package reconcile

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestStatusWritesStale: a CR read at the resourceVersion the cache held
// when cueop last wrote its status is stale until the cache moves on; a
// write that changed nothing (same resourceVersion) brings no event, so it
// makes nothing stale, and keeps the mark of the write before it.
func TestStatusWritesStale(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "w"}
	at := func(rv string) *unstructured.Unstructured {
		cr := &unstructured.Unstructured{}
		cr.SetResourceVersion(rv)
		return cr
	}
	var w crs
	if w.stale(key, at("1")) {
		t.Error("stale before any write")
	}
	w.wrote(key, "1", "2")
	if !w.stale(key, at("1")) || !w.stale(key, at("1")) {
		t.Error("the version read before the write is not stale")
	}
	if w.stale(key, at("2")) {
		t.Error("the version written is stale")
	}
	if w.stale(key, at("1")) {
		t.Error("stale again after the cache moved on")
	}

	w.wrote(key, "2", "3")
	w.wrote(key, "3", "3") // a no-op write after it, in the same reconcile
	if !w.stale(key, at("2")) {
		t.Error("a no-op write forgot the write before it")
	}
	if w.stale(key, at("3")) {
		t.Error("a no-op write left the CR stale")
	}
	w.wrote(key, "3", "3")
	if w.stale(key, at("3")) {
		t.Error("a no-op write alone made the CR stale")
	}

	w.wrote(key, "3", "4")
	w.forget(key, true)
	if w.stale(key, at("3")) {
		t.Error("stale after forget")
	}
}

// TestNotRenderedIsNeverConverged: a reconcile that ends without a render
// of the CR's current inputs (refused, failed to run, or ended before it)
// says why it waits, Reconciling=True with reason RenderPending, and
// kstatus does not call the CR Current; so does one that failed after its
// render with nothing else to say.
func TestNotRenderedIsNeverConverged(t *testing.T) {
	cases := map[string]struct {
		step   func(r *run)
		reason string
		msg    string
	}{
		"refused": {func(r *run) { r.note(outcome{pending: "render not run, retrying: bomb: 1 earlier evaluations ..."}) },
			wellknown.ReasonRenderPending, "render not run, retrying: bomb: 1 earlier"},
		"skipped": {func(r *run) {}, wellknown.ReasonRenderPending, "not rendered at generation 3 with template revision rev-1 yet"},
		"failed after render": {func(r *run) {
			r.res = &render.Result{Ready: true}
			r.note(r.unfinished(errors.New("finalizer cueop.dev/retain: conflict")))
		}, wellknown.ReasonProgressing, "retrying: finalizer cueop.dev/retain: conflict"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.example.com/v1", "kind": "X",
				"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(3)}}}
			r := testRun(&Reconciler{Applier: &apply.Applier{}}, &template.Kind{Revision: "rev-1"}, cr)
			c.step(r)
			cr.Object["status"] = r.desiredStatus()
			rec := meta.FindStatusCondition(oldConditions(cr.Object["status"].(map[string]any)), wellknown.ConditionReconciling)
			if rec == nil || rec.Status != metav1.ConditionTrue || rec.Reason != c.reason || !strings.Contains(rec.Message, c.msg) {
				t.Fatalf("Reconciling = %+v, want True, %s, %q", rec, c.reason, c.msg)
			}
			res, err := kstatus.Compute(cr)
			if err != nil || res.Status == kstatus.CurrentStatus {
				t.Errorf("kstatus = %v (%v), want not Current", res, err)
			}
		})
	}
}
