package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
)

// OwnedFunc lists from the API server, not a cache, the objects in
// namespace ns whose controller owner reference names the uid owner,
// across every kind a CR may own: a child whose cueop labels lag or were
// rewritten, or that a sharded replica's cache does not select, is listed
// all the same.
type OwnedFunc func(ctx context.Context, ns string, owner types.UID) ([]*unstructured.Unstructured, error)

// deletionRecheck is how often a CR whose ordered deletion waits looks
// again, besides the deletion events of its children: a child the cache
// does not hold sends none.
const deletionRecheck = 10 * time.Second

// deleted is the path of a CR being deleted: none of the stages of a live
// CR's reconcile run. A CR whose finalizers cueop took off, or read from a
// cache behind cueop's last write of it, is left until the write's (or the
// CR's end's) event brings it back; otherwise what was kept of it between
// reconciles is dropped, but that its finalizers came off and that its
// status write failed (crs.go), and it is finalized.
func (r *Reconciler) deleted(ctx context.Context, key types.NamespacedName, cr *unstructured.Unstructured) (ctrl.Result, error) {
	if r.crs.finalized(key, cr) || r.crs.stale(key, cr) {
		return ctrl.Result{}, nil
	}
	r.forget(ctx, key, false)
	return r.finalize(ctx, cr)
}

// finalize runs for a CR being deleted that carries cueop's finalizers.
// With the user's orphan cascade (kubectl delete --cascade=orphan) it
// deletes nothing and takes its finalizers off: the garbage collector
// orphans the children. Otherwise it lists the CR's children from the API
// server, releases those to retain, and, for a kind with waves, deletes the
// highest wave left and waits; only when nothing is left to delete does it
// take its finalizers off, and the CR goes (the garbage collector deletes
// what a kind without waves leaves).
func (r *Reconciler) finalize(ctx context.Context, cr *unstructured.Unstructured) (ctrl.Result, error) {
	fins := cr.GetFinalizers()
	if !anyOurs(fins) {
		return ctrl.Result{}, nil
	}
	if slices.Contains(fins, metav1.FinalizerOrphanDependents) {
		return ctrl.Result{}, r.finalizers().set(ctx, cr, noFinalizers)
	}
	run := r.newRun(r.Kind(), cr, log.FromContext(ctx))
	left, err := ownedNow(ctx, r.Cluster, cr)
	if err == nil {
		left, err = run.pruner.releaseRetained(ctx, left)
		run.emitEvents()
	}
	if err != nil {
		return run.refusedDeletion(ctx, err) // forbidden.go
	}
	if len(left) > 0 && slices.Contains(fins, wellknown.FinalizerOrdered) {
		o, err := run.pruner.deleteWave(ctx, left) // ordered.go
		run.note(o)
		o, err = run.forbidden(err)
		run.note(o)
		if err := errors.Join(err, run.writeStatus(ctx)); err != nil {
			return ctrl.Result{}, err
		}
		run.events.stall(cr, run.stalled)
		return ctrl.Result{RequeueAfter: deletionRecheck}, nil
	}
	return ctrl.Result{}, r.finalizers().set(ctx, cr, noFinalizers)
}

// ownedNow are the objects cr controls, as the API server has them now
// (Cluster.Owned), each once.
func ownedNow(ctx context.Context, cluster Cluster, cr *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if cluster == nil {
		return nil, fmt.Errorf("%s: no way to list its children from the API server", objectText(cr))
	}
	objs, err := cluster.Owned(ctx, cr.GetNamespace(), cr.GetUID())
	if err != nil {
		what := "list the children of " + objectText(cr) + " in namespace " + cr.GetNamespace()
		return nil, fmt.Errorf("%s: list its children: %w", objectText(cr), deny(what, err)) // forbidden.go
	}
	seen := map[types.UID]bool{}
	return slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
		dup := seen[o.GetUID()]
		seen[o.GetUID()] = true
		return dup
	}), nil
}

// releaseRetained releases every child of left that is to outlive its CR
// (retained) and returns the others.
func (p pruner) releaseRetained(ctx context.Context, left []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var errs []error
	var rest []*unstructured.Unstructured
	for _, o := range left {
		if !retained(p.opts, o) {
			rest = append(rest, o)
			continue
		}
		err := deny("release "+objectText(o), p.rel.release(ctx, o)) // forbidden.go
		p.tally.done(apply.Released, o, err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", objectText(p.cr), errs[0])
	}
	return rest, nil
}
