package reconcile

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// actions are what a reconcile did to children, by action: the names of
// the children ("Kind name"), for its Events and its Reconciling message.
type actions map[apply.Action][]string

func (d actions) record(a apply.Action, obj *unstructured.Unstructured) {
	if a == apply.Unchanged || a == "" {
		return
	}
	d[a] = append(d[a], obj.GetKind()+" "+obj.GetName())
}

// tally tells the Observer what the stages of a reconcile of a CR of kind
// did, and records the actions for its Events.
type tally struct {
	obs  Observer // nil: nobody
	kind string
	did  actions
}

// rendered tells of a render (not of a reuse of the memo's).
func (t tally) rendered(d time.Duration, err error) {
	if t.obs != nil {
		t.obs.Rendered(t.kind, d, err)
	}
}

// applied tells of a write to a child.
func (t tally) applied(a apply.Action, err error) {
	if t.obs != nil {
		t.obs.Applied(t.kind, a, err)
	}
}

// done tells of a write to obj, and records what it did when it succeeded.
func (t tally) done(a apply.Action, obj *unstructured.Unstructured, err error) {
	t.applied(a, err)
	if err == nil {
		t.did.record(a, obj)
	}
}

// settled tells of a CR left as it is (resync.go).
func (t tally) settled() {
	if obs, ok := t.obs.(interface{ Settled(kind string) }); ok {
		obs.Settled(t.kind)
	}
}

// eventer emits a reconcile's Events on its CR.
type eventer struct {
	rec  record.EventRecorder // nil: none
	opts render.Options       // the render budget of unrendered.go
}

// actions emits one Event per kind of action in did (not one per child,
// to keep the API requests per CR low).
func (e eventer) actions(cr *unstructured.Unstructured, did actions) {
	if e.rec == nil {
		return
	}
	var kinds []string
	for a := range did {
		kinds = append(kinds, string(a))
	}
	sort.Strings(kinds)
	for _, a := range kinds {
		names := did[apply.Action(a)]
		e.rec.Event(cr, corev1.EventTypeNormal, eventReason(a), fmt.Sprintf("%s %s", a, strings.Join(names, ", ")))
	}
}

// stall emits a Warning for cr's stall s, if any, unless the CR already
// shows this very stall.
func (e eventer) stall(cr *unstructured.Unstructured, s *stall) {
	if e.rec != nil && s != nil && stallChanged(cr, s) {
		e.rec.Event(cr, corev1.EventTypeWarning, s.reason, s.message)
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
