// Letting go of a child: delete it (Prune, Delete), delete it to create it
// anew when the API server refuses a change as immutable (Replace,
// Recreate), or release it, left in place with no field of it cueop's
// (Release).
//
// It must not delete by name alone: every delete carries the live object's
// UID, so an object that took its name meanwhile is never deleted.

package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prune deletes live, a child that is no longer desired, with background
// propagation. The delete carries live's UID as a precondition, so an object
// that has replaced live under the same name is never deleted. An object
// that is already gone, or replaced, counts as pruned.
func (a *Applier) Prune(ctx context.Context, live *unstructured.Unstructured) error {
	if err := a.delete(ctx, live, metav1.DeletePropagationBackground); err != nil {
		return fmt.Errorf("%s prune failed: %w", subject(live), err)
	}
	return nil
}

// Delete deletes live with propagation policy p, by UID as Prune does:
// ordered deletion deletes each wave in the foreground, so that a child is
// gone only once its dependents are.
func (a *Applier) Delete(ctx context.Context, live *unstructured.Unstructured, p metav1.DeletionPropagation) error {
	if err := a.delete(ctx, live, p); err != nil {
		return fmt.Errorf("%s delete failed: %w", subject(live), err)
	}
	return nil
}

// delete deletes live by UID with propagation policy p. NotFound and a failed UID precondition (a
// Conflict: the name now belongs to another object) are success.
func (a *Applier) delete(ctx context.Context, live *unstructured.Unstructured, p metav1.DeletionPropagation) error {
	uid := live.GetUID()
	if uid == "" {
		return errors.New("no uid: pass the live object")
	}
	err := a.Client.Delete(ctx, live,
		client.Preconditions{UID: &uid}, client.PropagationPolicy(p))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// immutableMarks are what the API server's validation says when an update
// changes a field that cannot change after creation.
var immutableMarks = []string{
	"immutable",                   // "field is immutable" (selectors, Job template, ...), PVC spec, ConfigMap data with immutable: true
	"may not change",              // "pod updates may not change fields other than", Service clusterIPs "may not change once set"
	"for fields other than",       // StatefulSet spec
	"cannot be modified once set", // declarative validation of update-once fields
}

// IsImmutable reports whether err, or an error it wraps, is the API server
// refusing a change as immutable (422 Invalid): such a change needs
// Recreate.
func IsImmutable(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	texts := []string{st.Message}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			texts = append(texts, c.Message)
		}
	}
	for _, t := range texts {
		for _, m := range immutableMarks {
			if strings.Contains(t, m) {
				return true
			}
		}
	}
	return false
}

// Replace deletes live so that the next apply creates it anew, as Prune
// does, but its dependents are orphaned when orphan is set (kubectl delete
// --cascade=orphan): the new object adopts those its selector matches.
func (a *Applier) Replace(ctx context.Context, live *unstructured.Unstructured, orphan bool) error {
	p := metav1.DeletePropagationBackground
	if orphan {
		p = metav1.DeletePropagationOrphan
	}
	if err := a.delete(ctx, live, p); err != nil {
		return fmt.Errorf("%s delete to recreate failed: %w", subject(live), err)
	}
	return nil
}

// ImmutableFields are the fields the API server names in err as immutable,
// each with the first line of its message, or err's message when it names
// none.
func ImmutableFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []string{err.Error()}
	}
	st := status.Status()
	var out []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Field != "" && hasImmutableMark(c.Message) {
				out = append(out, c.Field+": "+firstLine(c.Message))
			}
		}
	}
	if len(out) == 0 {
		out = []string{firstLine(st.Message)}
	}
	return out
}

func hasImmutableMark(s string) bool {
	for _, m := range immutableMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	const most = 300
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}

// Recreate replaces live with desired: it deletes live (by UID, with
// background propagation), waits until no object of that name with live's
// UID is left, polling with a short backoff bounded by ctx, then creates
// desired with an apply. Give ctx a deadline: a Pod on a node leaves only
// once its kubelet confirms, after its grace period.
func (a *Applier) Recreate(ctx context.Context, desired, live *unstructured.Unstructured) error {
	if err := a.recreate(ctx, desired, live); err != nil {
		return fmt.Errorf("%s recreate failed: %w", subject(desired), err)
	}
	return nil
}

func (a *Applier) recreate(ctx context.Context, desired, live *unstructured.Unstructured) error {
	obj, _, err := stamp(desired)
	if err != nil {
		return err
	}
	if live != nil {
		if err := a.delete(ctx, live, metav1.DeletePropagationBackground); err != nil {
			return err
		}
		if err := a.waitGone(ctx, live); err != nil {
			return err
		}
	}
	_, err = a.send(ctx, obj)
	return err
}

// waitGone polls until live's name is free or held by another UID.
func (a *Applier) waitGone(ctx context.Context, live *unstructured.Unstructured) error {
	const first, most = 20 * time.Millisecond, time.Second
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(live.GroupVersionKind())
	for delay := first; ; delay = min(2*delay, most) {
		err := a.Client.Get(ctx, client.ObjectKeyFromObject(live), cur)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case cur.GetUID() != live.GetUID():
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for uid %s to go: %w", live.GetUID(), context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

// Released is what Release does: the object stays, no longer owned.
const Released Action = "released"

// Release lets go of live, a child of the object whose uid is owner,
// leaving it in place as it is: it removes owner's references and the
// labels and annotations named by keys, sets the annotations of mark, then
// removes the field manager's managedFields entries, so that no field of
// the object belongs to cueop any more and a later apply by someone else
// meets no conflict with it. Fields cueop alone set stay, owned by nobody;
// mark is owned by the manager "<field manager>-release", which keeps the
// managedFields list from becoming empty (the API server would then give
// every field to "before-first-apply" at the next apply). An object that
// is gone counts as released.
//
// It takes two patches: the first (releasePatch) returns the object with
// every managedFields entry, which the cache does not hold; the second, a
// JSON patch guarded by the resourceVersion the first returned, drops
// cueop's entries.
func (a *Applier) Release(ctx context.Context, live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) error {
	if err := a.release(ctx, live, owner, keys, mark); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s release failed: %w", subject(live), err)
	}
	return nil
}

func (a *Applier) release(ctx context.Context, live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) error {
	obj := live.DeepCopy()
	manager := a.fieldManager() + "-release"
	if err := a.patch(ctx, obj, types.MergePatchType, releasePatch(live, owner, keys, mark), manager); err != nil {
		return err
	}
	entries, _, _ := unstructured.NestedSlice(obj.Object, "metadata", "managedFields")
	kept := []any{}
	for _, e := range entries {
		if m, _ := e.(map[string]any); m["manager"] != a.fieldManager() {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(entries) {
		return nil
	}
	if len(kept) == 0 {
		kept = []any{map[string]any{}} // an empty list keeps the entries: one empty entry clears them
	}
	return a.patch(ctx, obj, types.JSONPatchType, []map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
		{"op": "replace", "path": "/metadata/managedFields", "value": kept},
	}, manager)
}

// releasePatch is a JSON merge patch that removes owner's references and
// the labels and annotations of keys, and sets the annotations of mark. It
// is idempotent (a key already gone is no error), so a second release from
// a cache that lags behind the first succeeds; the uid it carries makes it
// fail on another object that took live's name (uid is immutable).
func releasePatch(live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) map[string]any {
	labels, annotations := map[string]any{}, map[string]any{}
	for _, k := range keys {
		labels[k], annotations[k] = nil, nil
	}
	for k, v := range mark {
		annotations[k] = v
	}
	md := map[string]any{"uid": string(live.GetUID()), "labels": labels, "annotations": annotations}
	refs, _, _ := unstructured.NestedSlice(live.Object, "metadata", "ownerReferences")
	kept := []any{}
	for _, r := range refs {
		if m, _ := r.(map[string]any); m["uid"] != string(owner) {
			kept = append(kept, r)
		}
	}
	switch {
	case len(kept) == len(refs):
	case len(kept) == 0:
		md["ownerReferences"] = nil
	default:
		md["ownerReferences"] = kept
	}
	return map[string]any{"metadata": md}
}

func (a *Applier) patch(ctx context.Context, obj *unstructured.Unstructured, pt types.PatchType, body any, manager string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return a.Client.Patch(ctx, obj, client.RawPatch(pt, data), client.FieldOwner(manager))
}
