package reconcile

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
)

func (r *run) record(a apply.Action, obj *unstructured.Unstructured) {
	if a == apply.Unchanged || a == "" {
		return
	}
	if r.actions == nil {
		r.actions = map[apply.Action][]string{}
	}
	r.actions[a] = append(r.actions[a], obj.GetKind()+" "+obj.GetName())
}

// emitEvents emits one Event per kind of action of this reconcile (not one
// per child, to keep the API requests per CR low), and one for a stall.
func (r *run) emitEvents() {
	rec := r.r.Recorder
	if rec == nil {
		return
	}
	var kinds []string
	for a := range r.actions {
		kinds = append(kinds, string(a))
	}
	sort.Strings(kinds)
	for _, a := range kinds {
		names := r.actions[apply.Action(a)]
		rec.Event(r.cr, corev1.EventTypeNormal, eventReason(a), fmt.Sprintf("%s %s", a, strings.Join(names, ", ")))
	}
	r.stallEvent()
	r.warnUnrendered() // unrendered.go
}

// stallEvent emits a Warning for the CR's stall, unless the CR already
// shows this very stall.
func (r *run) stallEvent() {
	if r.r.Recorder != nil && r.stalled != nil && stallChanged(r.cr, r.stalled) {
		r.r.Recorder.Event(r.cr, corev1.EventTypeWarning, r.stalled.reason, r.stalled.message)
	}
}

func eventReason(action string) string {
	return strings.ToUpper(action[:1]) + action[1:]
}

// stallChanged is true unless the CR already shows this very stall, so that
// retries of a stalled CR do not repeat its Event.
func stallChanged(cr *unstructured.Unstructured, s *stall) bool {
	for _, c := range oldConditions(statusOf(cr)) {
		if c.Type == wellknown.ConditionStalled {
			return c.Status != "True" || c.Reason != s.reason || c.Message != s.message
		}
	}
	return true
}

func statusOf(cr *unstructured.Unstructured) map[string]any {
	st, _ := cr.Object["status"].(map[string]any)
	return st
}
