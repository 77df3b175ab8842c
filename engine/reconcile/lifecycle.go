package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
)

// ReasonImmutableChange stalls a CR whose child the API server refuses to
// change as immutable, when the child's policy does not allow recreating it.
const ReasonImmutableChange = "ImmutableChange"

// FinalizerRetain is on a CR while it has children to release, not delete,
// when it is deleted (policies: onDelete: "retain").
const FinalizerRetain = "cueop.dev/retain"

// releasedKeys are the labels and annotations by which cueop manages a
// child; a released child loses them.
var releasedKeys = []string{
	render.LabelManagedBy, render.LabelOwnerUID, render.LabelID,
	apply.AnnotationAppliedHash, render.AnnotationPrune, render.AnnotationOnDelete,
}

// AnnotationReleasedFrom names, on a released child, the CR it belonged to.
const AnnotationReleasedFrom = "cueop.dev/released-from"

// release lets go of o (apply.Release), marking it with the CR it came from.
func (r *run) release(ctx context.Context, o *unstructured.Unstructured) error {
	mark := map[string]string{AnnotationReleasedFrom: r.subject()}
	return r.r.Applier.Release(ctx, o, r.cr.GetUID(), releasedKeys, mark)
}

// refusal is a child whose change the API server refused as immutable.
type refusal struct {
	child render.Child
	err   error
}

// stallImmutable stalls the CR, and returns true, when a child whose change
// is immutable may not be recreated: nothing is deleted, not even the
// children that may be.
func (r *run) stallImmutable(refused []refusal) bool {
	var lines []string
	for _, f := range refused {
		if f.child.Policy.Recreate {
			continue
		}
		o, id := f.child.Object, f.child.ID
		hint := fmt.Sprintf("nothing was deleted: change it back, delete it by hand, or let the template recreate it (policies: %q: recreate: true)", id)
		if !render.Recreatable(o.GroupVersionKind().GroupKind()) {
			hint = fmt.Sprintf("a %s is never recreated, nothing was deleted: change it back or replace it by hand", o.GetKind())
		}
		lines = append(lines, fmt.Sprintf("children.%s: %s %s/%s: the API server refuses the change as immutable (%s); %s",
			id, o.GetKind(), o.GetNamespace(), o.GetName(), strings.Join(apply.ImmutableFields(f.err), "; "), hint))
	}
	if len(lines) == 0 {
		return false
	}
	r.stalled = &stall{reason: ReasonImmutableChange, message: strings.Join(lines, "\n")}
	return true
}

// pruneOne deletes a child the template no longer renders, or releases it
// when the policy recorded on it says prune: never.
func (r *run) pruneOne(ctx context.Context, o *unstructured.Unstructured) (apply.Action, error) {
	if o.GetAnnotations()[render.AnnotationPrune] == render.PruneNever {
		return apply.Released, r.release(ctx, o)
	}
	return apply.Pruned, r.r.Applier.Prune(ctx, o)
}

// syncFinalizer puts FinalizerRetain on the CR before a child to retain is
// applied, and takes it off once none is rendered or left. A CR that never
// retains anything costs no write.
func (r *run) syncFinalizer(ctx context.Context) error {
	want := slices.ContainsFunc(r.result_.Children, func(c render.Child) bool { return c.Policy.OnDelete == render.OnDeleteRetain })
	for _, o := range r.observed {
		want = want || retained(o)
	}
	if want == slices.Contains(r.cr.GetFinalizers(), FinalizerRetain) {
		return nil
	}
	return r.r.setFinalizer(ctx, r.cr, FinalizerRetain, want)
}

func retained(o *unstructured.Unstructured) bool {
	return o.GetAnnotations()[render.AnnotationOnDelete] == render.OnDeleteRetain
}

// setFinalizer adds or removes the finalizer name with a JSON patch guarded
// by the CR's uid, that leaves the other finalizers alone: neither an
// apply (it would create a CR deleted meanwhile) nor a merge patch (it
// replaces the whole list).
func (r *Reconciler) setFinalizer(ctx context.Context, cr *unstructured.Unstructured, name string, on bool) error {
	ops := finalizerOps(cr, name, on)
	if len(ops) == 0 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err == nil {
		err = r.Client.Patch(ctx, cr.DeepCopy(), client.RawPatch(types.JSONPatchType, data), client.FieldOwner(r.fieldManager()))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s: finalizer %s: %w", cr.GetKind(), cr.GetNamespace(), cr.GetName(), name, err)
	}
	return nil
}

func finalizerOps(cr *unstructured.Unstructured, name string, on bool) []map[string]any {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": string(cr.GetUID())}}
	fins := cr.GetFinalizers()
	i := slices.Index(fins, name)
	switch {
	case on && i >= 0, !on && i < 0:
		return nil
	case !on:
		at := fmt.Sprintf("/metadata/finalizers/%d", i)
		return append(ops, map[string]any{"op": "test", "path": at, "value": name}, map[string]any{"op": "remove", "path": at})
	}
	// Adding is guarded by the resourceVersion: a cache that lags behind an
	// earlier add must not add the finalizer twice, nor replace a list
	// created meanwhile.
	ops = append(ops, map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": cr.GetResourceVersion()})
	if len(fins) > 0 {
		return append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers/-", "value": name})
	}
	return append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers", "value": []any{name}})
}

// finalize runs for a CR being deleted: it releases the children whose
// policy says onDelete: retain, then removes FinalizerRetain so that the CR
// goes and the garbage collector deletes the other children.
func (r *Reconciler) finalize(ctx context.Context, cr *unstructured.Unstructured) error {
	if slices.Contains(cr.GetFinalizers(), FinalizerOrdered) {
		return r.finalizeOrdered(ctx, cr) // ordered.go
	}
	if !slices.Contains(cr.GetFinalizers(), FinalizerRetain) {
		return nil // the garbage collector removes the children
	}
	run := &run{r: r, kind: r.Kind(), cr: cr, log: log.FromContext(ctx)}
	if err := run.observe(ctx); err != nil {
		return err
	}
	if err := run.releaseRetained(ctx); err != nil {
		return err
	}
	return r.setFinalizer(ctx, cr, FinalizerRetain, false)
}

// releaseRetained releases every owned child whose policy says onDelete:
// retain.
func (r *run) releaseRetained(ctx context.Context) error {
	var errs []error
	seen := map[types.UID]bool{} // an object listed at several versions comes once
	for _, o := range r.owned.all {
		if seen[o.GetUID()] || !retained(o) {
			continue
		}
		seen[o.GetUID()] = true
		err := r.release(ctx, o)
		r.r.applied(r.r.Kind().Resource.Kind, apply.Released, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.record(apply.Released, o)
	}
	r.emitEvents()
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", r.subject(), errs[0])
	}
	return nil
}
