package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
// It takes two JSON patches: the first (guarded by live's uid) returns the
// object with every managedFields entry, which the cache does not hold; the
// second (guarded by the resourceVersion the first returned) drops cueop's
// entries.
func (a *Applier) Release(ctx context.Context, live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) error {
	if err := a.release(ctx, live, owner, keys, mark); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s release failed: %w", subject(live), err)
	}
	return nil
}

func (a *Applier) release(ctx context.Context, live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) error {
	obj := live.DeepCopy()
	ops := releaseOps(live, owner, keys, mark)
	if err := a.jsonPatch(ctx, obj, ops, a.fieldManager()+"-release"); err != nil {
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
	return a.jsonPatch(ctx, obj, []patchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: obj.GetResourceVersion()},
		{Op: "replace", Path: "/metadata/managedFields", Value: kept},
	}, a.fieldManager()+"-release")
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// releaseOps removes owner's references and the labels and annotations of
// keys that live has, and sets the annotations of mark.
func releaseOps(live *unstructured.Unstructured, owner types.UID, keys []string, mark map[string]string) []patchOp {
	ops := []patchOp{{Op: "test", Path: "/metadata/uid", Value: string(live.GetUID())}}
	refs, _, _ := unstructured.NestedSlice(live.Object, "metadata", "ownerReferences")
	var kept []any
	for _, r := range refs {
		if m, _ := r.(map[string]any); m["uid"] != string(owner) {
			kept = append(kept, r)
		}
	}
	switch {
	case len(kept) == len(refs):
	case len(kept) == 0:
		ops = append(ops, patchOp{Op: "remove", Path: "/metadata/ownerReferences"})
	default:
		ops = append(ops, patchOp{Op: "replace", Path: "/metadata/ownerReferences", Value: kept})
	}
	for _, field := range []string{"labels", "annotations"} {
		m, _, _ := unstructured.NestedMap(live.Object, "metadata", field)
		for _, k := range keys {
			if _, ok := m[k]; ok {
				ops = append(ops, patchOp{Op: "remove", Path: "/metadata/" + field + "/" + escapePointer(k)})
			}
		}
	}
	if _, has := live.Object["metadata"].(map[string]any)["annotations"]; !has && len(mark) > 0 {
		m := map[string]any{}
		for k, v := range mark {
			m[k] = v
		}
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: m})
	}
	for k, v := range mark {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: v})
	}
	return ops
}

func (a *Applier) jsonPatch(ctx context.Context, obj *unstructured.Unstructured, ops []patchOp, manager string) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return a.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data), client.FieldOwner(manager))
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
