package reconcile

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// TestAuthorConditions: the template's conditions are merged beside Ready,
// Reconciling and Stalled with the CR's generation; a lastTransitionTime
// changes only when the status does; a type the template no longer gives
// is removed; a CR not rendered keeps them; conditions of other field
// managers are left alone.
func TestAuthorConditions(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.example.com/v1", "kind": "X",
		"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(4)}}}
	r := testRun(&Reconciler{Applier: &apply.Applier{}}, &template.Kind{Revision: "rev-1"}, cr)
	step := func(conds ...render.Condition) []metav1.Condition {
		t.Helper()
		r.res = nil
		if conds != nil {
			r.res = &render.Result{Ready: true, Conditions: conds}
		}
		cr.Object["status"] = r.desiredStatus()
		// What the status write leaves: cueop owns the types it wrote.
		cr.SetManagedFields(statusManagedFields(cr))
		return oldConditions(cr.Object["status"].(map[string]any))
	}
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	cr.Object["status"] = map[string]any{"conditions": conditionsValue([]metav1.Condition{
		{Type: "Migrated", Status: "False", Reason: "Running", LastTransitionTime: old},
		{Type: "Audited", Status: "True", Reason: "ByOthers", LastTransitionTime: old},
	})}
	cr.SetManagedFields([]metav1.ManagedFieldsEntry{ownedBy("cueop", "Migrated"), ownedBy("auditor", "Audited")})

	conds := step(render.Condition{Type: "Migrated", Status: "False", Reason: "Running"}, render.Condition{Type: "Exposed", Status: "True", Reason: "ServiceExists"})
	m := meta.FindStatusCondition(conds, "Migrated")
	if m == nil || !m.LastTransitionTime.Equal(&old) || m.ObservedGeneration != 4 {
		t.Errorf("unchanged Migrated = %+v, want its lastTransitionTime %v kept and observedGeneration 4", m, old)
	}
	if e := meta.FindStatusCondition(conds, "Exposed"); e == nil || e.Status != "True" || e.LastTransitionTime.IsZero() {
		t.Errorf("Exposed = %+v, want True with a transition time", e)
	}
	if meta.FindStatusCondition(conds, "Ready") == nil || meta.FindStatusCondition(conds, "Audited") != nil {
		t.Errorf("conditions %+v: want cueop's Ready, not another manager's Audited", conds)
	}

	conds = step(render.Condition{Type: "Migrated", Status: "True", Reason: "JobComplete"})
	if m := meta.FindStatusCondition(conds, "Migrated"); m == nil || m.Status != "True" || m.LastTransitionTime.Equal(&old) {
		t.Errorf("Migrated = %+v, want True with a new transition time", m)
	}
	if meta.FindStatusCondition(conds, "Exposed") != nil {
		t.Error("Exposed is kept after the template stopped giving it")
	}
	conds = step() // not rendered
	if m := meta.FindStatusCondition(conds, "Migrated"); m == nil || m.Status != "True" {
		t.Errorf("a CR not rendered lost its Migrated condition: %+v", conds)
	}
}

// statusManagedFields says cueop owns every condition type of cr's status.
func statusManagedFields(cr *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	var types []string
	for _, c := range oldConditions(cr.Object["status"].(map[string]any)) {
		types = append(types, c.Type)
	}
	return []metav1.ManagedFieldsEntry{ownedBy("cueop", types...)}
}

func ownedBy(manager string, types ...string) metav1.ManagedFieldsEntry {
	keys := ""
	for i, t := range types {
		if i > 0 {
			keys += ","
		}
		keys += `"k:{\"type\":\"` + t + `\"}":{}`
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Subresource: "status", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{` + keys + `}}}`)}}
}
