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

// childWriter is stage 5: it applies a CR's rendered children, claiming
// an existing object of a child's name only when the CR controls it or may
// adopt it (ownership.go), and recreates a child whose change is immutable
// when its policy allows (lifecycle.go).
type childWriter struct {
	applier *apply.Applier
	records *crs // the per-CR records: the children found in conflict
	rel     releaser
	modes   BindingModes // nil: a Pending claim is not ready for the gates
	tally   tally
	cr      *unstructured.Unstructured
}

// applyAll applies every child of res that would change, but those held
// (a later wave: waves.go): first it creates those v does not hold,
// claiming an object of a child's name only when the CR controls it or may
// adopt it (ownership.go); while one is in conflict the CR stalls and
// nothing that exists is changed. A child whose change the API server
// refuses as immutable is recreated when its policy allows it, one per CR
// at a time and only while every other child is ready, so a rollout never
// takes down more than one child of a CR; when its policy does not, the CR
// stalls (lifecycle.go).
func (w childWriter) applyAll(ctx context.Context, res *render.Result, v *view, held map[string]bool) (outcome, error) {
	o, errs := w.createAbsent(ctx, res, v, held) // ownership.go
	if o.stall != nil {
		return o, errors.Join(errs...)
	}
	var immutable []refusal
	for _, c := range res.Children {
		live := v.live(c)
		if held[c.ID] || live == nil {
			continue // a later wave (waves.go), or created above
		}
		action, err := w.applier.Apply(ctx, c.Object, live)
		err = deny("apply "+objectText(c.Object), err) // forbidden.go
		if err == nil {
			action, err = w.dropReleasedMark(ctx, c, live, action)
		}
		switch {
		case err != nil && apply.IsImmutable(err):
			immutable = append(immutable, refusal{c, err})
		case err != nil:
			w.tally.applied("", err)
			errs = append(errs, err)
		default:
			w.tally.done(action, c.Object, nil)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return applyFailed(err), err
	}
	return w.recreate(ctx, res, v, immutable)
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
func (w childWriter) recreate(ctx context.Context, res *render.Result, v *view, immutable []refusal) (outcome, error) {
	if len(immutable) == 0 {
		return outcome{}, nil
	}
	if o := stallImmutable(immutable); o.stall != nil { // lifecycle.go
		return o, nil
	}
	c := immutable[0].child
	if !othersReady(ctx, res, v, c.ID, w.modes) {
		return waitFor(fmt.Sprintf("waiting for children to be ready before recreating %s %s", c.Object.GetKind(), c.Object.GetName())), nil
	}
	live := v.live(c)
	if err := deny("delete "+objectText(live), w.applier.Replace(ctx, live, c.Policy.Cascade == render.CascadeOrphan)); err != nil {
		w.tally.applied("", err)
		return outcome{}, err
	}
	w.tally.done(apply.Recreated, c.Object, nil)
	return waitFor(fmt.Sprintf("recreating %s %s: an immutable field changed", c.Object.GetKind(), c.Object.GetName())), nil
}

// othersReady is true when every child of res but id exists and is ready
// for the gates (gateReady: its readyWhen, else kstatus).
func othersReady(ctx context.Context, res *render.Result, v *view, id string, modes BindingModes) bool {
	for _, c := range res.Children {
		if ok, _ := gateReady(ctx, c, v.wholeLive(c), modes); c.ID != id && !ok { // partialview.go
			return false
		}
	}
	return true
}
