package reconcile

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// budgetStall returns the stall of a CR whose render ran out of budget at
// its current generation with k's revision, or nil. Such a CR is not
// rendered again until its spec or the template changes: the render would
// only run out again, leaving one more evaluation running abandoned. The
// stall is read from the CR's own Stalled condition, so that it holds
// across restarts of the operator too.
func budgetStall(cr *unstructured.Unstructured, k *template.Kind) *stall {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != wellknown.ConditionStalled || m["status"] != "True" || m["reason"] != wellknown.ReasonRenderBudget {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		msg, _ := m["message"].(string)
		if gen == cr.GetGeneration() && strings.Contains(msg, render.BudgetRevision(k)) {
			return &stall{reason: wellknown.ReasonRenderBudget, message: msg}
		}
	}
	return nil
}
