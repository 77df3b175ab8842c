package reconcile

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// applyAll applies every child that would change: first it creates those
// that do not exist, claiming an object of a child's name only when the CR
// controls it or may adopt it (ownership.go); while one is in conflict the
// CR stalls and nothing that exists is changed. A child whose change the
// API server refuses as immutable is recreated when its policy allows it,
// one per CR at a time and only while every other child is ready, so a
// rollout never takes down more than one child of a CR; when its policy
// does not, the CR stalls (lifecycle.go).
func (r *run) applyAll(ctx context.Context) (outcome, error) {
	o, errs := r.createAbsent(ctx) // ownership.go
	if o.stall != nil {
		return o, errors.Join(errs...)
	}
	var immutable []refusal
	for _, c := range r.result_.Children {
		live := r.live(c)
		if r.held[c.ID] || live == nil {
			continue // a later wave (waves.go), or created above
		}
		action, err := r.r.Applier.Apply(ctx, c.Object, live)
		err = deny("apply "+objectText(c.Object), err) // forbidden.go
		if err == nil {
			action, err = r.dropReleasedMark(ctx, c, live, action)
		}
		switch {
		case err != nil && apply.IsImmutable(err):
			immutable = append(immutable, refusal{c, err})
		case err != nil:
			r.r.applied(r.kind.Resource.Kind, "", err)
			errs = append(errs, err)
		default:
			r.r.applied(r.kind.Resource.Kind, action, nil)
			r.record(action, c.Object)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return applyFailed(err), err
	}
	return r.recreate(ctx, immutable)
}

// live is the live object c is (same group, kind and name, at any version),
// or nil when none; see matchLive.
func (r *run) live(c render.Child) *unstructured.Unstructured {
	return r.owned.matchLive(c.Object)
}

// applyFailed stalls the CR when the API server refuses a child for good
// (invalid, forbidden); other failures are retried with backoff.
func applyFailed(err error) outcome {
	terminating := apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
	if !terminating && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)) {
		return stallOf(wellknown.ReasonApplyRejected, err.Error())
	}
	return waitFor("apply failed, retrying: " + err.Error())
}

// recreate deletes the first child whose change is immutable, to be
// created again, when its policy allows and every other child is ready
// (lifecycle.go).
func (r *run) recreate(ctx context.Context, immutable []refusal) (outcome, error) {
	if len(immutable) == 0 {
		return outcome{}, nil
	}
	if o := stallImmutable(immutable); o.stall != nil { // lifecycle.go
		return o, nil
	}
	c := immutable[0].child
	if !r.othersReady(ctx, c.ID) {
		return waitFor(fmt.Sprintf("waiting for children to be ready before recreating %s %s", c.Object.GetKind(), c.Object.GetName())), nil
	}
	live := r.live(c)
	if err := deny("delete "+objectText(live), r.r.Applier.Replace(ctx, live, c.Policy.Cascade == render.CascadeOrphan)); err != nil {
		r.r.applied(r.kind.Resource.Kind, "", err)
		return outcome{}, err
	}
	r.r.applied(r.kind.Resource.Kind, apply.Recreated, nil)
	r.record(apply.Recreated, c.Object)
	return waitFor(fmt.Sprintf("recreating %s %s: an immutable field changed", c.Object.GetKind(), c.Object.GetName())), nil
}

// othersReady is true when every child but id exists and is ready for the
// gates (gateReady: its readyWhen, else kstatus).
func (r *run) othersReady(ctx context.Context, id string) bool {
	for _, c := range r.result_.Children {
		if ok, _ := gateReady(ctx, c, r.wholeLive(c), r.r.bindingModes()); c.ID != id && !ok { // partialview.go
			return false
		}
	}
	return true
}

// prune deletes every owned child the render no longer has, or releases it
// when its policy says prune: never. It runs only after every apply
// succeeded.
func (r *run) prune(ctx context.Context) error {
	var errs []error
	victims, err := r.confirmed(ctx, pruneVictims(r.result_.Children, r.owned)) // forbidden.go
	if err != nil {
		return err
	}
	for _, o := range victims {
		action, err := r.pruneOne(ctx, o)
		r.r.applied(r.kind.Resource.Kind, action, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.record(action, o)
	}
	return errors.Join(errs...)
}
