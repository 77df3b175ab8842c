// Stage 7, status: the template's status, observedGeneration, the revision
// and the conditions Ready, Reconciling and Stalled beside the template's
// own, made from what the stages implied (run.note); written once, and only
// when it changed (sameStatus); a write refused for a stale managedFields
// entry repaired; a status that fails to be written told to the operator
// (StatusFailing).
//
// It must not write anything but the CR's status subresource.

package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/migrate"
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
	st["conditions"] = conditionsValue(r.conditions(r.authorConditions(own)))
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
		r.pendingConditions(set, meta.FindStatusCondition(conds, wellknown.ConditionReady) != nil)
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
		reason, msg := r.notReady()
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
		return nil // settled: the status is what it was (resync.go); busy for a moment (rendering.go)
	}
	return r.status.write(ctx, r.kind, r.cr, r.desiredStatus())
}

// statusWriter is stage 7's hands: it writes a CR's status.
type statusWriter struct {
	client   client.Client
	live     client.Reader // nil: that write is left to fail
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
	if err != nil && w.repairEntries(ctx, k, cr, err) {
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
// cueop last wrote its status or its finalizers (deletion.go), until the
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
	if same, known := jsonSame(mine, st); known {
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

// unfinished is the outcome of a reconcile that failed after its render: a
// failure nothing else explained (a finalizer, prune or recreate request)
// keeps the CR Reconciling, never Converged.
func (r *run) unfinished(err error) outcome {
	if err == nil || r.wait() != "" || r.stalled != nil || r.observeFailed != nil || r.res == nil {
		return outcome{}
	}
	return waitFor("retrying: " + firstLine(err.Error()))
}

// pendingConditions are the conditions of a CR this reconcile did not
// render at its current inputs (r.res is nil, nothing stalled it): it
// waits, and says why. A Ready condition it already has stays as it is: its
// children, unchanged, serve as they did (a template edit rolling out must
// not make Ready drop); a CR never rendered reads Ready=Unknown.
func (r *run) pendingConditions(set func(typ string, s metav1.ConditionStatus, reason, msg string), hasReady bool) {
	msg := r.pendingMessage()
	set(wellknown.ConditionReconciling, metav1.ConditionTrue, wellknown.ReasonRenderPending, msg)
	set(wellknown.ConditionStalled, metav1.ConditionFalse, wellknown.ReasonRenderPending, "")
	if !hasReady {
		set(wellknown.ConditionReady, metav1.ConditionUnknown, wellknown.ReasonRenderPending, msg)
	}
}

// pendingMessage says why a CR without a render of its current inputs
// waits.
func (r *run) pendingMessage() string {
	switch {
	case r.pending != "":
		return r.pending
	case r.wait() != "":
		return r.wait()
	}
	return fmt.Sprintf("not rendered at generation %d with template revision %s yet; retrying", r.cr.GetGeneration(), r.kind.Revision)
}

// notReady is the reason and message of Ready=False for a rendered CR:
// wellknown.ReasonReadsAbsentField naming the absent reads Ready depends on
// (render.ReadyAbsent) when they may be what blocks it, else
// ChildrenNotReady, with those reads, if any, named in a note.
func (r *run) notReady() (reason, message string) {
	const waiting = "waiting for children to be ready"
	absent := render.ReadyAbsent(r.kind, r.res.Children, r.res.ReadyByDefault)
	if len(absent) == 0 {
		return wellknown.ReasonChildrenNotReady, waiting
	}
	msgs := make([]string, len(absent))
	for i, a := range absent {
		msgs[i] = a.Sentence() + " (" + template.ShortPos(a.Pos) + ")"
	}
	if !render.AbsentMayBlock(absent, r.res.Children, r.v.wholeObserved()) {
		return wellknown.ReasonChildrenNotReady, waiting + "; note: " + strings.Join(msgs, "; ")
	}
	return wellknown.ReasonReadsAbsentField, strings.Join(msgs, "; ") + ": it never finds a value"
}

// StatusObserver, when the Observer implements it, is told of each
// status write of a CR of kind that failed.
type StatusObserver interface {
	StatusWriteFailed(kind string)
}

// StatusFailing is the kind's state of its status writes: Failing CRs
// whose last status write failed, First the first of them (ns/name) and
// its error.
type StatusFailing struct {
	Failing    int
	First, Err string
}

// setStatus records the outcome of key's status write (err "": written,
// or nothing to write) and returns the kind's state and whether it moved
// between none failing and some (or is told for the first time: a kind's
// controller started anew must clear what the one before it set), so that
// the kind's state (Host.StatusFailing) changes only when the
// first CR fails and when the last one is written. The state's First and
// Err are found only when it moved (one pass over the records), so that
// an outcome that does not move it costs O(1) under the lock every
// reconcile of the kind takes, however many CRs fail.
func (s *crs) setStatus(key types.NamespacedName, err string) (StatusFailing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.failing
	s.update(key, func(c *crRecord) {
		switch {
		case c.statusErr == "" && err != "":
			s.failing++
		case c.statusErr != "" && err == "":
			s.failing--
		}
		c.statusErr = err
	})
	st := StatusFailing{Failing: s.failing}
	moved := !s.told || (before == 0) != (st.Failing == 0)
	s.told = true
	if !moved {
		return st, false
	}
	var first *types.NamespacedName
	for k, c := range s.m {
		if c.statusErr != "" && (first == nil || k.Namespace < first.Namespace || k.Namespace == first.Namespace && k.Name < first.Name) {
			first = &k
		}
	}
	if first != nil {
		st.First, st.Err = first.String(), s.m[*first].statusErr
	}
	return st, true
}

// statusWritten tells how the status write of cr went (err nil: written,
// or nothing to write): a failure is a Warning Event on the CR and the
// observer's count, and the kind's state moves when the first CR fails
// or the last failing one is written.
func (r *Reconciler) statusWritten(ctx context.Context, cr *unstructured.Unstructured, err error) {
	if ctx.Err() != nil {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
		if r.Recorder != nil {
			r.Recorder.Event(cr, corev1.EventTypeWarning, wellknown.ReasonStatusWriteFailed,
				"status not written, the CR shows its last written status, retried with backoff: "+msg)
		}
		if o, ok := r.Observer.(StatusObserver); ok {
			o.StatusWriteFailed(r.Kind().Resource.Kind)
		}
	}
	st, moved := r.crs.setStatus(types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}, msg)
	if moved {
		r.tellStatusFailing(ctx, st)
	}
}

// unservedVersion is how the API server refuses a write of a CR with a
// managedFields entry at a version its CRD no longer serves, the version
// after it.
const unservedVersion = "request to convert CR to an invalid group/version: "

// repairEntries, when err (a status write) is the API server's refusal of
// a CR with a managedFields entry at a version not served, moves the
// CR's entries at versions not served (the one the error names and those
// the kind does not declare) to the version it is read at
// (migrate.UnservedFields), read from the API server (Reconciler.Live:
// the cache keeps only cueop's entry), by a merge patch of the CR with
// the resourceVersion it was read at; the entries at served versions are
// left alone. It tells whether that wrote, for the status write to be
// retried once; a conflict or any other failure changes nothing and
// leaves the write's error to its backoff.
func (w statusWriter) repairEntries(ctx context.Context, k *template.Kind, cr0 *unstructured.Unstructured, err error) bool {
	var status apierrors.APIStatus
	if w.live == nil || !errors.As(err, &status) {
		return false
	}
	msg := status.Status().Message
	i := strings.Index(msg, unservedVersion)
	if i < 0 {
		return false
	}
	named := strings.Fields(msg[i+len(unservedVersion):])
	gv := cr0.GroupVersionKind().GroupVersion()
	served := map[string]bool{}
	for _, v := range k.Versions {
		served[schema.GroupVersion{Group: gv.Group, Version: v.Name}.String()] = true
	}
	if len(named) > 0 {
		delete(served, strings.TrimRight(named[0], `".,;`))
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(cr0.GroupVersionKind())
	if gerr := w.live.Get(ctx, client.ObjectKeyFromObject(cr0), cr); gerr != nil {
		w.log.Error(gerr, objectText(cr0)+": not read for its managedFields at versions not served")
		return false
	}
	mfs, stale := migrate.UnservedFields(cr.Object, cr.GetManagedFields(), gv.String(), func(v string) bool { return served[v] })
	if !stale {
		return false
	}
	if len(mfs) == 0 {
		mfs = []metav1.ManagedFieldsEntry{{}} // an empty list keeps the entries there are
	}
	patch, perr := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cr.GetResourceVersion(), "managedFields": mfs}})
	if perr != nil {
		return false
	}
	target := cr.DeepCopy()
	if perr := w.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(w.manager)); perr != nil {
		w.log.Error(perr, objectText(cr0)+": managedFields at versions not served not moved to "+gv.Version)
		return false
	}
	if w.recorder != nil {
		w.recorder.Event(cr0, corev1.EventTypeNormal, wellknown.ReasonManagedFieldsRepaired,
			fmt.Sprintf("managedFields entries at versions no longer served moved to %s, for the status to be written", gv.Version))
	}
	return true
}

// jsonSame reports whether a and b are the same JSON value, as comparing
// them after json.Marshal and a decode into any would find (numbers as
// float64, a nil list or map as null), without encoding either. known is
// false when a or b holds what that round trip would change or that this
// walk does not know (a type other than those of an unstructured object,
// a string that is not valid UTF-8, a NaN or an infinity, a json.Number):
// the caller then compares them by encoding. So does a value nested deeper
// than maxJSONDepth (a cycle among them), as the decode refuses the
// deepest.
func jsonSame(a, b any) (same, known bool) {
	return jsonSameAt(a, b, 0)
}

// maxJSONDepth is deeper than any status, and well within encoding/json's
// bound on the nesting it decodes (10000).
const maxJSONDepth = 1000

func jsonSameAt(a, b any, depth int) (same, known bool) {
	if depth > maxJSONDepth {
		return false, false
	}
	ka, ok := jsonKindOf(a)
	if !ok {
		return false, false
	}
	kb, ok := jsonKindOf(b)
	if !ok {
		return false, false
	}
	if ka != kb {
		// Still walk both: an unknown value anywhere must make the
		// caller encode, as it would have before.
		return false, jsonKnown(a, depth) && jsonKnown(b, depth)
	}
	switch ka {
	case jsonNull:
		return true, true
	case jsonBool:
		return a.(bool) == b.(bool), true
	case jsonString:
		return a.(string) == b.(string), true
	case jsonNumber:
		return jsonFloat(a) == jsonFloat(b), true
	case jsonArray:
		return jsonSameArrays(a.([]any), b.([]any), depth)
	default: // jsonObject
		return jsonSameObjects(a.(map[string]any), b.(map[string]any), depth)
	}
}

// jsonSameArrays is jsonSameAt of two arrays at depth: element by
// element, every element of the longer one walked too.
func jsonSameArrays(x, y []any, depth int) (same, known bool) {
	same = len(x) == len(y)
	for i := range max(len(x), len(y)) {
		switch {
		case i >= len(x):
			if !jsonKnown(y[i], depth+1) {
				return false, false
			}
		case i >= len(y):
			if !jsonKnown(x[i], depth+1) {
				return false, false
			}
		default:
			s, known := jsonSameAt(x[i], y[i], depth+1)
			if !known {
				return false, false
			}
			same = same && s
		}
	}
	return same, true
}

// jsonSameObjects is jsonSameAt of two objects at depth: key by key, the
// keys of either that the other lacks walked too.
func jsonSameObjects(x, y map[string]any, depth int) (same, known bool) {
	same = len(x) == len(y)
	for k, v := range x {
		if !utf8.ValidString(k) {
			return false, false
		}
		w, in := y[k]
		if !in {
			if !jsonKnown(v, depth+1) {
				return false, false
			}
			same = false
			continue
		}
		s, known := jsonSameAt(v, w, depth+1)
		if !known {
			return false, false
		}
		same = same && s
	}
	for k, w := range y {
		if _, in := x[k]; !in && (!utf8.ValidString(k) || !jsonKnown(w, depth+1)) {
			return false, false
		}
	}
	return same, true
}

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonString
	jsonNumber
	jsonArray
	jsonObject
)

// jsonKindOf is the JSON kind x encodes to, ok false when jsonSame does
// not know it.
func jsonKindOf(x any) (jsonKind, bool) {
	switch t := x.(type) {
	case nil:
		return jsonNull, true
	case bool:
		return jsonBool, true
	case string:
		return jsonString, utf8.ValidString(t)
	case int, int32, int64:
		return jsonNumber, true
	case float64:
		return jsonNumber, !math.IsNaN(t) && !math.IsInf(t, 0)
	case []any:
		if t == nil {
			return jsonNull, true
		}
		return jsonArray, true
	case map[string]any:
		if t == nil {
			return jsonNull, true
		}
		return jsonObject, true
	}
	return 0, false
}

// jsonKnown is true when jsonSame knows every value within x, x at depth.
func jsonKnown(x any, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	k, ok := jsonKindOf(x)
	if !ok {
		return false
	}
	switch k {
	case jsonArray:
		for _, e := range x.([]any) {
			if !jsonKnown(e, depth+1) {
				return false
			}
		}
	case jsonObject:
		for key, v := range x.(map[string]any) {
			if !utf8.ValidString(key) || !jsonKnown(v, depth+1) {
				return false
			}
		}
	}
	return true
}

// jsonFloat is the number x as a decode into any gives it back: a float64
// (an integer rounded as strconv.ParseFloat rounds its decimal text).
func jsonFloat(x any) float64 {
	switch t := x.(type) {
	case int:
		return float64(t)
	case int32:
		return float64(t)
	case int64:
		return float64(t)
	}
	return x.(float64)
}
