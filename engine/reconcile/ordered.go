package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// deleteWave deletes the children of the highest wave among left that are
// not being deleted already, with foreground propagation: a child stays,
// being deleted, until the garbage collector has deleted its dependents (a
// Deployment's ReplicaSets and their Pods), so that the next wave waits
// for them too. Their deletion events bring the CR back.
func (p pruner) deleteWave(ctx context.Context, left []*unstructured.Unstructured) (outcome, error) {
	top := 0
	for _, o := range left {
		top = max(top, render.WaveOf(o))
	}
	var errs []error
	for _, o := range left {
		if render.WaveOf(o) != top || o.GetDeletionTimestamp() != nil {
			continue
		}
		err := deny("delete "+objectText(o), p.applier.Delete(ctx, o, metav1.DeletePropagationForeground)) // forbidden.go
		p.tally.applied(apply.Pruned, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.log.Info("deleting wave", "wave", top, "child", fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	o := outcome{deleting: fmt.Sprintf("deleting wave %d: waiting for %s to be gone", top, strings.Join(waveNames(left, top), ", "))}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("%s: delete wave %d: %w", objectText(p.cr), top, err)
	}
	return o, nil
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

// ReleaseOrdered removes wellknown.FinalizerOrdered from cr, for a kind no longer
// served.
func (r *Reconciler) ReleaseOrdered(ctx context.Context, cr *unstructured.Unstructured) error {
	return r.finalizers().set(ctx, cr, map[string]bool{wellknown.FinalizerOrdered: false})
}
