package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestSettledOnlyWhenNothingChanged: a converged CR whose status records
// the digest of its inputs and children is settled (no render) exactly
// while none of them changed: a spec, generation, revision, observed
// condition, cueop's field set or applied hash of a child, a child gone or
// a finalizer of cueop's taken off each make the reconcile run in full.
func TestSettledOnlyWhenNothingChanged(t *testing.T) {
	kind := loadKinds(t, "../../templates").Lookup("cache.example.com", "RedisCluster")
	converged := func() inputs {
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
			"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(2),
				"finalizers": []any{wellknown.FinalizerRetain}},
			"spec": map[string]any{"replicas": int64(3), "version": "7.2"},
		}}
		var objs []*unstructured.Unstructured
		observed := map[string]*unstructured.Unstructured{}
		for _, id := range []string{"pod-0", "pod-1", "pod-2"} {
			o := livePod(t, id, "True")
			o.SetUID(types.UID("uid-" + o.GetName()))
			o.SetLabels(map[string]string{wellknown.LabelID: id})
			o.SetAnnotations(map[string]string{wellknown.AnnotationAppliedHash: "h-" + id})
			yes := true
			o.SetOwnerReferences([]metav1.OwnerReference{{UID: cr.GetUID(), Controller: &yes, Kind: "RedisCluster", Name: "r"}})
			o.Object["metadata"].(map[string]any)["managedFields"] = []any{
				map[string]any{"manager": apply.DefaultFieldManager, "operation": "Apply", "fieldsV1": `{"f:spec":{}}`},
			}
			objs, observed[id] = append(objs, o), o
		}
		r := testRun(&Reconciler{Applier: &apply.Applier{}}, kind, cr)
		r.v = &view{owned: sortChildren(cr, objs), observed: observed}
		res, err := render.Render(kind, cr, observed, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.res = res
		cr.Object["status"] = r.desiredStatus()
		if cr.Object["status"].(map[string]any)[StatusInputsDigest] == nil {
			t.Fatalf("converged status without %s: %v", StatusInputsDigest, cr.Object["status"])
		}
		return inputs{kind: kind, cr: cr, v: &view{owned: r.v.owned, observed: observed}, stamp: r.stamp, manager: r.manager}
	}
	if r := converged(); !r.settled() {
		t.Fatal("a converged CR whose inputs did not change is not settled")
	}
	for name, change := range map[string]func(r *inputs){
		"spec":          func(r *inputs) { r.cr.Object["spec"].(map[string]any)["version"] = "7.4" },
		"generation":    func(r *inputs) { r.cr.SetGeneration(3) },
		"revision":      func(r *inputs) { r.kind = editedKind(t) },
		"pod not ready": func(r *inputs) { r.v.observed["pod-1"] = livePod(t, "pod-1", "False") },
		"finalizer":     func(r *inputs) { r.cr.SetFinalizers(nil) },
		"applied hash": func(r *inputs) {
			r.v.owned.all[0].SetAnnotations(map[string]string{wellknown.AnnotationAppliedHash: "other"})
		},
		"child deleted":  func(r *inputs) { r.v.owned = sortChildren(r.cr, r.v.owned.all[1:]) },
		"field set":      func(r *inputs) { r.v.owned.all[2].Object["metadata"].(map[string]any)["managedFields"] = nil },
		"not converged":  func(r *inputs) { r.cr.Object["status"].(map[string]any)["conditions"] = nil },
		"digest dropped": func(r *inputs) { delete(r.cr.Object["status"].(map[string]any), StatusInputsDigest) },
	} {
		r := converged()
		change(&r)
		if r.settled() {
			t.Errorf("%s: settled, want a full reconcile", name)
		}
	}
}

func editedKind(t *testing.T) *template.Kind {
	return loadKinds(t, editedTemplates(t)).Lookup("cache.example.com", "RedisCluster")
}
