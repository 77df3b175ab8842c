package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Finalizers are cueop's finalizers, the order in which one write adds
// them.
var Finalizers = []string{wellknown.FinalizerRetain, wellknown.FinalizerOrdered}

// noFinalizers takes every one of cueop's finalizers off.
var noFinalizers = map[string]bool{wellknown.FinalizerRetain: false, wellknown.FinalizerOrdered: false}

// finalizers writes cueop's finalizers on CRs.
type finalizers struct {
	client  client.Client
	records *crs // the per-CR records: the write's resourceVersion, the CR finalized
	manager string
}

// sync puts on cr, before any child is applied, the finalizers it needs,
// and takes off those it no longer needs: all in one write, none when
// nothing changes (a CR that needs none costs nothing).
// wellknown.FinalizerRetain while a child is to be released when the CR is
// deleted (rendered with onDelete: retain, or observed so under opts),
// wellknown.FinalizerOrdered while k has waves.
func (f finalizers) sync(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured, res *render.Result, observed map[string]*unstructured.Unstructured, opts render.Options) error {
	retain := slices.ContainsFunc(res.Children, func(c render.Child) bool { return c.Policy.OnDelete == render.OnDeleteRetain })
	for _, o := range observed {
		retain = retain || retained(opts, o) // prune.go
	}
	return f.set(ctx, cr, map[string]bool{wellknown.FinalizerRetain: retain, wellknown.FinalizerOrdered: k.Waves})
}

// set adds the finalizers want says on and removes those it says
// off, leaving the others alone, in one JSON patch guarded by the CR's uid:
// neither an apply (it would create a CR deleted meanwhile) nor a merge
// patch (it replaces the whole list). cr takes the finalizers and the
// resourceVersion the API server returns, so that a later write of this
// reconcile does not start from the old ones.
func (f finalizers) set(ctx context.Context, cr *unstructured.Unstructured, want map[string]bool) error {
	ops := finalizerOps(cr, want)
	if len(ops) == 0 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patched := cr.DeepCopy()
	err = f.client.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, data), client.FieldOwner(f.manager))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s/%s: finalizers %v: %w", cr.GetKind(), cr.GetNamespace(), cr.GetName(), want, err)
	}
	// Until the cache has the write, a reconcile reading the CR as it was
	// would write again: a deleted CR's finalizers would come off twice, the
	// second time answered 404.
	f.records.wrote(client.ObjectKeyFromObject(cr), cr.GetResourceVersion(), patched.GetResourceVersion())
	if cr.GetDeletionTimestamp() != nil && !anyOurs(patched.GetFinalizers()) {
		f.records.finalizedDone(client.ObjectKeyFromObject(cr), cr.GetUID())
	}
	cr.SetFinalizers(patched.GetFinalizers())
	cr.SetResourceVersion(patched.GetResourceVersion())
	return nil
}

// anyOurs says whether fins holds one of cueop's finalizers.
func anyOurs(fins []string) bool {
	return slices.ContainsFunc(Finalizers, func(f string) bool { return slices.Contains(fins, f) })
}

// finalizerOps are the JSON patch operations that bring cr's finalizers in
// line with want, nil when they are: removals first, from the highest
// index, each guarded by a test of the name at its index; then additions,
// guarded by the resourceVersion, so that a cache that lags behind an
// earlier add does not add a finalizer twice nor replace a list created
// meanwhile.
func finalizerOps(cr *unstructured.Unstructured, want map[string]bool) []map[string]any {
	fins := cr.GetFinalizers()
	var ops []map[string]any
	for i := len(fins) - 1; i >= 0; i-- {
		if on, ours := want[fins[i]]; ours && !on {
			at := fmt.Sprintf("/metadata/finalizers/%d", i)
			ops = append(ops, map[string]any{"op": "test", "path": at, "value": fins[i]}, map[string]any{"op": "remove", "path": at})
		}
	}
	var add []any
	for _, name := range Finalizers {
		if want[name] && !slices.Contains(fins, name) {
			add = append(add, name)
		}
	}
	if len(ops) == 0 && len(add) == 0 {
		return nil
	}
	head := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": string(cr.GetUID())}}
	if len(add) == 0 {
		return append(head, ops...)
	}
	head = append(head, map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": cr.GetResourceVersion()})
	ops = append(head, ops...)
	if len(fins) == 0 {
		return append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers", "value": add})
	}
	for _, name := range add {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers/-", "value": name})
	}
	return ops
}

// finalizedDone remembers, by its uid, that key is a CR being deleted
// whose last finalizer cueop took off, until the cache no longer holds it.
// Nothing is left to do for it: the API server refuses a new finalizer on
// an object being deleted. The write that removes the last finalizer
// deletes the CR and answers with the resourceVersion it had, so stale
// (status.go) cannot tell a cache that still holds the CR from one that
// caught up; without this, a reconcile reading the lagging cache took the
// finalizers off again, answered 404.
func (s *crs) finalizedDone(key types.NamespacedName, uid types.UID) {
	s.change(key, func(c *crRecord) { c.finalizedUID = uid })
}

// finalized says whether cr is a CR whose finalizers cueop took off; a CR
// of the same name with another uid forgets the old one.
func (s *crs) finalized(key types.NamespacedName, cr *unstructured.Unstructured) bool {
	done := false
	s.change(key, func(c *crRecord) {
		done = c.finalizedUID != "" && c.finalizedUID == cr.GetUID()
		if !done {
			c.finalizedUID = ""
		}
	})
	return done
}
