package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// desiredStatus is the status the CR should have after this reconcile: the
// template's fields (or the previous ones when the render failed), the
// observed generation, the template revision and the conditions.
func (r *run) desiredStatus() map[string]any {
	old, _ := r.cr.Object["status"].(map[string]any)
	st := map[string]any{}
	if r.res != nil {
		for k, v := range r.res.Status {
			st[k] = v
		}
		st["revision"] = r.kind.Revision
		if len(r.res.Immutable) > 0 {
			st[render.StatusImmutable] = r.res.Immutable
		}
	} else {
		owned := ownedStatusFields(r.cr, r.manager)
		for k, v := range old {
			if owned[k] && k != StatusInputsDigest {
				st[k] = v
			}
		}
	}
	st["observedGeneration"] = r.cr.GetGeneration()
	if r.observeFailed != nil {
		// Nothing was learnt about the children: the generation is not
		// observed (kstatus keeps the CR in progress).
		delete(st, "observedGeneration")
		if og, ok := old["observedGeneration"]; ok {
			st["observedGeneration"] = og
		}
	}
	own := ownConditions(oldConditions(old), ownedConditionTypes(r.cr, r.manager))
	st["conditions"] = conditionsValue(r.conditions(r.authorConditions(own))) // conditions.go
	r.recordDigest(st)
	return st
}

// recordDigest adds the inputs' digest (resync.go) to st when this
// reconcile converged from a single render of what it observed (a rerender
// renders another view of the children than observe gives).
func (r *run) recordDigest(st map[string]any) {
	if r.rerendered || !r.converged() {
		return
	}
	if d, ok := r.inputs().recorded(r.res != nil && r.res.ReadyByDefault); ok {
		st[StatusInputsDigest] = d
	}
}

// ownedStatusFields are the top-level status fields manager owns on cr,
// from its managedFields.
func ownedStatusFields(cr *unstructured.Unstructured, manager string) map[string]bool {
	owned := map[string]bool{}
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]any `json:"f:status"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) == nil {
			for k := range fields.Status {
				owned[strings.TrimPrefix(k, "f:")] = true
			}
		}
	}
	return owned
}

func (r *run) conditions(conds []metav1.Condition) []metav1.Condition {
	gen := r.cr.GetGeneration()
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	switch {
	case r.observeFailed != nil:
		msg := "children could not be listed, retrying: " + r.observeFailed.Error()
		set(wellknown.ConditionReconciling, metav1.ConditionUnknown, wellknown.ReasonObserveFailed, msg)
		set(wellknown.ConditionReady, metav1.ConditionUnknown, wellknown.ReasonObserveFailed, msg)
		return conds
	case r.missing != "" && r.stalled == nil:
		set(wellknown.ConditionReconciling, metav1.ConditionTrue, wellknown.ReasonReferenceNotFound, r.missing)
		set(wellknown.ConditionStalled, metav1.ConditionFalse, wellknown.ReasonReferenceNotFound, "")
		set(wellknown.ConditionReady, metav1.ConditionFalse, wellknown.ReasonReferenceNotFound, r.missing)
		return conds
	case r.stalled != nil:
		set(wellknown.ConditionStalled, metav1.ConditionTrue, r.stalled.reason, r.stalled.message)
		set(wellknown.ConditionReconciling, metav1.ConditionFalse, r.stalled.reason, stallHint(r.stalled.reason))
		set(wellknown.ConditionReady, metav1.ConditionFalse, r.stalled.reason, firstLine(r.stalled.message))
		return conds
	case r.deleting != "": // a stall (a denial) outranks it
		set(wellknown.ConditionReconciling, metav1.ConditionTrue, wellknown.ReasonDeleting, r.deleting)
		set(wellknown.ConditionStalled, metav1.ConditionFalse, wellknown.ReasonDeleting, "")
		set(wellknown.ConditionReady, metav1.ConditionFalse, wellknown.ReasonDeleting, r.deleting)
		return conds
	case r.res == nil: // not rendered at the current inputs: never Converged
		r.pendingConditions(set, meta.FindStatusCondition(conds, wellknown.ConditionReady) != nil) // pending.go
		return conds
	case r.progressing() != "":
		set(wellknown.ConditionReconciling, metav1.ConditionTrue, r.progressReason(), r.progressing())
	default:
		set(wellknown.ConditionReconciling, metav1.ConditionFalse, wellknown.ReasonConverged, "every child is applied at revision "+r.kind.Revision)
	}
	set(wellknown.ConditionStalled, metav1.ConditionFalse, wellknown.ReasonConverged, "")
	if r.res.Ready {
		set(wellknown.ConditionReady, metav1.ConditionTrue, wellknown.ReasonReady, "every child is ready")
	} else {
		reason, msg := r.notReady() // absentready.go
		set(wellknown.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
	return conds
}

// stallHint tells what gets a stalled CR moving again.
func stallHint(reason string) string {
	if h := forbiddenHint(reason); h != "" { // forbidden.go
		return h
	}
	if reason == wellknown.ReasonApplyRejected {
		return "the API server refused a child; retried with backoff, at once on a change of spec or template"
	}
	if reason == wellknown.ReasonImmutableChange {
		return "stalled until the spec or the template changes, or the child is deleted by hand"
	}
	if reason == wellknown.ReasonChildConflict {
		return "nothing is changed until the object is gone or released, or the spec or the template changes; checked again every minute"
	}
	return "stalled until the spec or the template changes"
}

// progressing says what this reconcile changed or waits for, or "".
func (r *run) progressing() string {
	var parts []string
	for _, a := range []apply.Action{apply.Created, Adopted, apply.Updated, apply.Recreated, apply.Pruned} {
		if n := len(r.did[a]); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, n))
		}
	}
	if w := r.wait(); w != "" {
		parts = append(parts, w)
	}
	if r.waveWait != "" {
		parts = append(parts, r.waveWait)
	}
	return strings.Join(parts, "; ")
}

func (r *run) progressReason() string {
	if r.waveWait != "" {
		return wellknown.ReasonWaitingForWave
	}
	old, _, _ := unstructured.NestedString(r.cr.Object, "status", "revision")
	if old != "" && old != r.kind.Revision {
		return wellknown.ReasonRollout
	}
	return wellknown.ReasonProgressing
}

// writeStatus applies the status once, and only when it changed.
func (r *run) writeStatus(ctx context.Context) error {
	if r.skipped || r.quiet {
		return nil // settled: the status is what it was (resync.go); busy for a moment (busy.go)
	}
	return r.status.write(ctx, r.kind, r.cr, r.desiredStatus())
}

// statusWriter is stage 7's hands: it writes a CR's status.
type statusWriter struct {
	client   client.Client
	live     client.Reader // staleentries.go; nil: that write is left to fail
	recorder record.EventRecorder
	records  *crs // the per-CR records: the write's resourceVersion
	manager  string
	log      logger
}

// write applies st, the status of cr rendered with k, unless cr has it.
func (w statusWriter) write(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured, st map[string]any) error {
	if sameStatus(cr.Object["status"], withoutDigest(st), ownedConditionTypes(cr, w.manager)) {
		return nil
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(),
		"metadata": map[string]any{"name": cr.GetName(), "namespace": cr.GetNamespace()},
		"status":   st,
	}}
	err := w.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(w.manager), client.ForceOwnership)
	if err != nil && w.repairEntries(ctx, k, cr, err) { // staleentries.go
		err = w.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
			client.FieldOwner(w.manager), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("%s: status write failed: %w", objectText(cr), err)
	}
	w.records.wrote(client.ObjectKeyFromObject(cr), cr.GetResourceVersion(), obj.GetResourceVersion())
	return nil
}

// wrote and stale keep, per CR (crRecord.behind), the resourceVersion the cache held when
// cueop last wrote its status or its finalizers (finalizers.go), until the
// cache moves past it. A reconcile
// that reads the CR at that version would compare against a status older
// than cueop's own last write: it would write again for nothing, with its
// conditions' lastTransitionTime reset, and the reconcile after it would
// put them back. The write's watch event is still to come and reconciles
// the CR again with the cache caught up, so such a reconcile is skipped.
// wrote records a status write of key made from the CR at resourceVersion
// read; written is the resourceVersion the API server answered with. A
// write that changed nothing (the same version) brings no event: it
// records nothing and keeps what an earlier write of the same reconcile
// recorded (finalizers, then a status already right), whose event is
// still to come.
func (s *crs) wrote(key types.NamespacedName, read, written string) {
	if read == "" || written == "" || read == written {
		return
	}
	s.change(key, func(c *crRecord) { c.behind = read })
}

// stale is true when cr, as read from the cache, predates cueop's last
// status write of it; otherwise the cache has moved on and key is
// forgotten.
func (s *crs) stale(key types.NamespacedName, cr *unstructured.Unstructured) bool {
	stale := false
	s.change(key, func(c *crRecord) {
		stale = c.behind != "" && c.behind == cr.GetResourceVersion()
		if !stale {
			c.behind = ""
		}
	})
	return stale
}

// sameStatus compares statuses as JSON, so that int and int64, or a nil
// and an empty list, do not count as changes.
func sameStatus(old any, st map[string]any, owned map[string]bool) bool {
	m, _ := old.(map[string]any)
	mine := make(map[string]any, len(st))
	for k := range st {
		if v, ok := m[k]; ok {
			mine[k] = v
		}
	}
	if _, ok := mine["conditions"]; ok {
		mine["conditions"] = conditionsValue(ownConditions(oldConditions(m), owned))
	}
	// Compared as JSON (keys sorted, 3 and 3.0 alike): what the API
	// server would store of either. Equal bytes are equal values; other
	// bytes may be too (2.0 as CUE writes a float, 2 as the API server
	// gives it back), so those are decoded and compared.
	if same, known := jsonSame(mine, st); known { // jsonsame.go
		return same
	}
	a, err1 := json.Marshal(mine)
	b, err2 := json.Marshal(st)
	if err1 != nil || err2 != nil {
		return false
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func oldConditions(old map[string]any) []metav1.Condition {
	raw, _ := old["conditions"].([]any)
	var conds []metav1.Condition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			conds = append(conds, cond)
		}
	}
	return conds
}

func conditionsValue(conds []metav1.Condition) []any {
	sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	out := make([]any, 0, len(conds))
	for i := range conds {
		conds[i].Message = clipMessage(conds[i].Message)
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		out = append(out, m)
	}
	return out
}

// maxMessage is the longest condition message the API server takes (in
// characters): a longer one (a render error quoting a tenant's long
// value) would fail the whole status write, and Ready would keep its old
// value.
const maxMessage = 32768

// clipMessage cuts msg to maxMessage characters, saying so.
func clipMessage(msg string) string {
	const mark = " ... (cut)"
	if utf8.RuneCountInString(msg) <= maxMessage {
		return msg
	}
	r := []rune(msg)
	return string(r[:maxMessage-len(mark)]) + mark
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (and more)"
	}
	return s
}

func (r *Reconciler) fieldManager() string {
	if r.Applier != nil && r.Applier.FieldManager != "" {
		return r.Applier.FieldManager
	}
	return apply.DefaultFieldManager
}
