package reconcile

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// authorConditions merges the template's own conditions (the render's
// Conditions) into conds: each is set with the CR's generation as its
// observedGeneration and keeps its lastTransitionTime while its status
// stays (meta.SetStatusCondition); a type cueop wrote before that the
// render no longer gives is removed. A CR not rendered at its inputs keeps
// the ones it has.
func (r *run) authorConditions(conds []metav1.Condition) []metav1.Condition {
	if r.res == nil {
		return conds
	}
	given := map[string]bool{}
	for _, c := range r.res.Conditions {
		given[c.Type] = true
		meta.SetStatusCondition(&conds, metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status),
			Reason: c.Reason, Message: c.Message, ObservedGeneration: r.cr.GetGeneration()})
	}
	return slices.DeleteFunc(conds, func(c metav1.Condition) bool {
		return !given[c.Type] && !slices.Contains(template.EngineConditions, c.Type)
	})
}

// ownedConditionTypes are the condition types cueop writes on cr: its
// own (Ready, Reconciling, Stalled) and those manager owns by cr's
// managedFields (the template's, as last written). The others belong to
// other field managers and are neither copied nor compared.
func ownedConditionTypes(cr *unstructured.Unstructured, manager string) map[string]bool {
	owned := map[string]bool{}
	for _, t := range template.EngineConditions {
		owned[t] = true
	}
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				Conditions map[string]any `json:"f:conditions"`
			} `json:"f:status"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		for key := range fields.Status.Conditions {
			var k struct{ Type string }
			if rest, ok := strings.CutPrefix(key, "k:"); ok && json.Unmarshal([]byte(rest), &k) == nil && k.Type != "" {
				owned[k.Type] = true
			}
		}
	}
	return owned
}

// ownConditions keeps the conditions of the types cueop writes.
func ownConditions(conds []metav1.Condition, owned map[string]bool) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range conds {
		if owned[c.Type] {
			out = append(out, c)
		}
	}
	return out
}
