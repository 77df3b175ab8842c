// What a reconcile reports beside its status: its Events (one per kind of
// action, one for a stall, one for the spec fields the template never
// sees) and its metrics tally.
//
// It must not decide anything: it reports what the run found and did.

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
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
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
	opts render.Options       // the render budget, which the unrendered fields are found within
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

// unrendered emits, once per generation of the CR, by the reconcile
// whose status records that generation as observed (not one retried that
// leaves status.observedGeneration behind: children not listed, render
// busy, the status write failed), a Warning Event naming the fields of a spoke's spec that the hub
// cannot hold (convert.Unrendered): the conversion annotation keeps
// them, so they read back at that version, but the template renders the
// hub and never sees them. An Event, not a condition: the fields are what
// was written, not a state of the CR's children (the CR may well be
// Ready), and the Event reaches `kubectl describe` when the spec changes.
// behind says that this reconcile's status keeps the old
// observedGeneration.
func (e eventer) unrendered(k *template.Kind, cr *unstructured.Unstructured, behind bool) {
	if e.rec == nil || len(k.Versions) < 2 || cr.GetDeletionTimestamp() != nil || !annotated(cr) {
		return
	}
	if og, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); og == cr.GetGeneration() {
		return // told when this generation was first reconciled
	}
	if behind {
		return // the status keeps the old generation: told by the reconcile that records it
	}
	c, err := convert.New(k)
	if err != nil || c == nil {
		return
	}
	fields, err := c.WithBudget(e.opts.Budget).Lenient().Unrendered(cr)
	if err != nil || len(fields) == 0 {
		return
	}
	e.rec.Event(cr, corev1.EventTypeWarning, wellknown.ReasonSpecNotRendered, unrenderedMessage(fields, k.Hub().Name))
}

// maxUnrenderedNamed is how many fields the SpecNotRendered Event names;
// the rest are counted, so that a spec with thousands of them (a map
// whose every entry has a spoke-only field) gives an Event of a few lines.
const maxUnrenderedNamed = 10

// unrenderedMessage is the SpecNotRendered Event's message for fields:
// those lost are "not rendered", those the hub changes (normalises)
// "rendered as the hub holds" them; maxUnrenderedNamed named in all.
func unrenderedMessage(fields []convert.UnrenderedField, hub string) string {
	var lost, changed, lostVersions, changedVersions []string
	for _, f := range fields {
		if f.Changed {
			changed = append(changed, f.String())
			changedVersions = appendNew(changedVersions, f.Version)
		} else {
			lost = append(lost, f.String())
			lostVersions = appendNew(lostVersions, f.Version)
		}
	}
	budget := maxUnrenderedNamed
	named := func(names []string) string {
		n := min(len(names), budget)
		budget -= n
		out := strings.Join(names[:n], ", ")
		if n < len(names) {
			out += fmt.Sprintf(" and %d more", len(names)-n)
			if n == 0 {
				out = fmt.Sprintf("%d more", len(names))
			}
		}
		return out
	}
	var parts []string
	if len(lost) > 0 {
		parts = append(parts, named(lost)+kept(lostVersions)+"not rendered: the template renders the hub version "+hub+", which cannot hold them")
	}
	if len(changed) > 0 {
		pronoun := "them"
		if len(changed) == 1 {
			pronoun = "it"
		}
		parts = append(parts, named(changed)+kept(changedVersions)+"rendered as the hub holds "+pronoun+": the template renders the hub version "+hub+", which changes "+pronoun)
	}
	return strings.Join(parts, "; ")
}

// kept says which annotations keep fields of versions (in order, each
// once): ": kept by the annotation cueop.dev/conversion.v2 and read back
// at that version, but ".
func kept(versions []string) string {
	names := make([]string, len(versions))
	for i, v := range versions {
		names[i] = wellknown.AnnotationConversionPrefix + v
	}
	if len(names) == 1 {
		return ": kept by the annotation " + names[0] + " and read back at that version, but "
	}
	return ": kept by the annotations " + strings.Join(names, ", ") + " and read back at their versions, but "
}

// annotated tells that cr carries a spec in a conversion annotation.
func annotated(cr *unstructured.Unstructured) bool {
	for a := range cr.GetAnnotations() {
		if strings.HasPrefix(a, wellknown.AnnotationConversionPrefix) {
			return true
		}
	}
	return false
}
