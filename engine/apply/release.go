package apply

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
