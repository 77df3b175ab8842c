// The deletion path: a CR being deleted lists its children from the API
// server, releases those to retain and, for a kind with waves, deletes the
// others wave by wave before its finalizers come off; and the finalizers
// that let this path run, synced at stage 5 of a live CR.
//
// It must not render, nor delete a child to retain; the user's orphan
// cascade deletes nothing.

package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
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
// status write failed (reconciler.go), and it is finalized.
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
		o, err := run.pruner.deleteWave(ctx, left)
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
