package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
)

// FinalizerOrdered is on the CRs of a kind that orders its children in
// waves: a CR being deleted loses its children in reverse wave order, each
// wave gone before the next is deleted, and only then goes.
const FinalizerOrdered = "cueop.dev/ordered-deletion"

// syncOrderedFinalizer puts FinalizerOrdered on the CR of a kind with waves
// before any child is applied, and takes it off a CR whose kind no longer
// has waves. A kind without waves costs no write.
func (r *run) syncOrderedFinalizer(ctx context.Context) error {
	want := r.kind.Waves
	if want == slices.Contains(r.cr.GetFinalizers(), FinalizerOrdered) {
		return nil
	}
	return r.r.setFinalizer(ctx, r.cr, FinalizerOrdered, want)
}

// finalizeOrdered runs for a CR being deleted that carries
// FinalizerOrdered: it releases the children to retain, deletes the
// children of the highest wave left (each child's wave is recorded on it,
// render.AnnotationWave), and waits for their deletion events; once no
// child is left it removes the finalizers, and the CR goes.
func (r *Reconciler) finalizeOrdered(ctx context.Context, cr *unstructured.Unstructured) error {
	run := &run{r: r, kind: r.Kind(), cr: cr, log: log.FromContext(ctx)}
	if err := run.observe(ctx); err != nil {
		return err
	}
	if err := run.releaseRetained(ctx); err != nil {
		return err
	}
	left := run.toDelete()
	if len(left) > 0 {
		err := run.deleteWave(ctx, left)
		return errors.Join(err, run.writeStatus(ctx))
	}
	if err := r.setFinalizer(ctx, cr, FinalizerRetain, false); err != nil {
		return err
	}
	return r.setFinalizer(ctx, cr, FinalizerOrdered, false)
}

// toDelete are the owned children to delete, each object once, the ones
// to retain left out.
func (r *run) toDelete() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[types.UID]bool{}
	for _, o := range r.owned.all {
		if seen[o.GetUID()] || retained(o) {
			continue
		}
		seen[o.GetUID()] = true
		out = append(out, o)
	}
	return out
}

// deleteWave deletes the children of the highest wave among left that are
// not being deleted already. Their deletion events bring the CR back.
func (r *run) deleteWave(ctx context.Context, left []*unstructured.Unstructured) error {
	top := 0
	for _, o := range left {
		top = max(top, render.WaveOf(o))
	}
	var errs []error
	for _, o := range left {
		if render.WaveOf(o) != top || o.GetDeletionTimestamp() != nil {
			continue
		}
		err := r.r.Applier.Prune(ctx, o)
		r.r.applied(r.kind.Resource.Kind, apply.Pruned, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.log.Info("deleting wave", "wave", top, "child", fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	r.deleting = fmt.Sprintf("deleting wave %d: waiting for %s to be gone", top, strings.Join(waveNames(left, top), ", "))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: delete wave %d: %w", r.subject(), top, err)
	}
	return nil
}

// waveNames names the children of wave w among left.
func waveNames(left []*unstructured.Unstructured, w int) []string {
	var out []string
	for _, o := range left {
		if render.WaveOf(o) == w {
			out = append(out, fmt.Sprintf("%s %s", o.GetKind(), o.GetName()))
		}
	}
	return out
}

// ReasonDeleting is the reason of a CR being deleted wave by wave.
const ReasonDeleting = "Deleting"

// ReleaseOrdered removes FinalizerOrdered from cr, for a kind no longer
// served.
func (r *Reconciler) ReleaseOrdered(ctx context.Context, cr *unstructured.Unstructured) error {
	return r.setFinalizer(ctx, cr, FinalizerOrdered, false)
}
