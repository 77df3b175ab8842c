package reconcile

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// reconcileLive reconciles cr, a CR not being deleted, with the revision
// its rollout chooses: the stages of converge, then its status (stage 7),
// its Events and its rollout's bookkeeping.
func (r *Reconciler) reconcileLive(ctx context.Context, req ctrl.Request, cr *unstructured.Unstructured) (ctrl.Result, error) {
	if r.crs.stale(req.NamespacedName, cr) {
		return ctrl.Result{}, nil // the event of cueop's last status write brings the CR back
	}
	rev, _, _ := unstructured.NestedString(cr.Object, "status", "revision")
	observed, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	k := r.Rollout.Choose(req.NamespacedName, rev, observed != cr.GetGeneration())
	if k == nil {
		return ctrl.Result{}, nil // waits for its turn (Rollout.OnWake), left as it is
	}
	run := r.newRun(k, cr, log.FromContext(ctx)) // reconciler.go
	// A denial stalls the CR, and is no error (forbidden.go).
	o, err := run.forbidden(run.converge(ctx))
	run.note(o)
	run.note(run.unfinished(err)) // pending.go
	// 7. status
	serr := run.writeStatus(ctx) // status.go
	run.statusFailed = serr != nil
	if serr != nil {
		err = errors.Join(err, serr)
	}
	r.statusWritten(ctx, cr, serr) // statusfail.go
	run.emitEvents()
	if ctx.Err() != nil {
		return ctrl.Result{}, nil // shutting down: the next leader picks the CR up
	}
	if run.missing != "" && run.stalled == nil {
		r.Rollout.Park(req.NamespacedName, rev) // waits for a reference, not for the rollout
	} else {
		r.Rollout.Done(req.NamespacedName, k, err == nil && run.converged(), run.stalled != nil)
	}
	if serr != nil {
		return run.result(err), err
	}
	return quietly(run.result(err), err) // quiet.go
}

// run is one reconcile of one CR: its stages, each given what it needs
// (Reconciler.newRun), and what they found, did and implied, from which
// the status (status.go) and the Events are made.
type run struct {
	kind *template.Kind
	cr   *unstructured.Unstructured
	log  logger

	// The stages, in the order converge runs them.
	host     Host           // 0. admit: may the kind act in the namespace
	observer observer       // 1. observe.go
	resolver resolver       // 2. references.go
	stamp    string         // 3. resync.go: what renders alike besides the inputs
	renderer renderer       // 4. rendering.go
	fins     finalizers     // 5. finalizers.go
	writer   childWriter    // 5. converge.go, ownership.go
	pruner   pruner         // 6. prune.go
	status   statusWriter   // 7. status.go
	events   eventer        // events.go
	tally    tally          // events.go
	opts     render.Options // the administrator's render policy
	manager  string         // cueop's field manager

	// What the stages found and did.
	v          *view                        // 1. what observe saw of the children
	referenced map[string]render.Referenced // 2. what the references resolved to
	// observeFailed is why the children could not be listed: the reconcile
	// knows nothing new about them and must not say it converged.
	observeFailed error
	// skipped: the status records a convergence at these very inputs and
	// children, so nothing was rendered or applied (3, resync.go).
	skipped bool
	res     *render.Result // 4. the render, nil when none at these inputs
	// rerendered: the children were observed and rendered twice (rerender).
	rerendered bool
	held       map[string]bool // 5. children of waves not applied yet
	waveWait   string          // which child the next wave waits for
	did        actions         // 5, 6. what was done to children
	// statusFailed: the status write failed, so the generation it would
	// record is not recorded (and the reconcile is retried).
	statusFailed bool

	// What the stages implied for the conditions, set by note alone
	// (outcome.go).
	stalled  *stall
	waiting  string // why the CR is not converged yet, if it is not (wait)
	missing  string // the references not found, if any
	deleting string // which wave a deletion waits for
	pending  string // why the current inputs were not rendered (pending.go)
	quiet    bool   // busy for a moment: no status write (busy.go)
}

// logger is what a reconcile logs with.
type logger interface {
	Info(msg string, kv ...any)
	Error(err error, msg string, kv ...any)
}

// converge runs the stages of a reconcile of a CR that is not being
// deleted (deletion.go), in order. Each stage returns what it implies for
// the CR's conditions (outcome.go), which note records; a stage that
// stalls the CR, or fails, ends it. reconcileLive writes the status (7).
func (r *run) converge(ctx context.Context) error {
	// 0. admit: the kind may act in the namespace (forbidden.go), the CR
	// is not stalled over its render budget (budget.go).
	if r.note(stalledBy(notBound(r.host, r.cr))) || r.note(stalledBy(budgetStall(r.cr, r.kind))) {
		return nil
	}
	// 1. observe the children (observe.go).
	if err := r.observe(ctx, viewKeys(r.kind)); err != nil { // partialview.go
		return err
	}
	// 2. resolve the references (references.go).
	referenced, o, err := r.resolver.resolve(ctx, r.kind, r.cr)
	if r.referenced = referenced; r.note(o) || err != nil || r.missing != "" {
		return err
	}
	// 3. decide: a CR settled at these very inputs is left as it is
	// (resync.go).
	if r.skipped = r.inputs().settled(); r.skipped {
		r.tally.settled()
		return nil
	}
	// 4. render (rendering.go), and again when the template saw other
	// objects than its children.
	if o, err := r.render(ctx); r.note(o) || err != nil || r.res == nil {
		return err
	}
	if o, err := r.renderer.watchKinds(ctx, r.cr, r.res); r.note(o) || err != nil {
		return err
	}
	if o, err := r.rerender(ctx); r.note(o) || err != nil || r.res == nil {
		return err
	}
	// 5. apply: finalizers first (finalizers.go), then the children, wave
	// by wave (waves.go, converge.go).
	if err := r.fins.sync(ctx, r.kind, r.cr, r.res, r.v.observed, r.opts); err != nil {
		return err
	}
	if r.held, r.waveWait = gateWaves(ctx, r.kind, r.res, r.v, r.writer.modes); r.held != nil {
		r.res.Ready = false
	}
	if o, err := r.writer.applyAll(ctx, r.res, r.v, r.held); r.note(o) || err != nil {
		return err
	}
	// 6. prune what the render no longer has (prune.go).
	return r.pruner.prune(ctx, r.res.Children, r.v.owned)
}

// observe is stage 1, run again by rerender: a failure leaves the run
// without a render, knowing nothing new of the children.
func (r *run) observe(ctx context.Context, keep map[string]bool) error {
	v, err := r.observer.observe(ctx, r.cr, keep)
	if err != nil {
		r.res, r.observeFailed = nil, err
		return err
	}
	r.v = v
	return nil
}

// render is stage 4 over what the run observed and resolved.
func (r *run) render(ctx context.Context) (outcome, error) {
	res, o, err := r.renderer.render(ctx, r.kind, r.cr, r.v, r.referenced)
	r.res = res
	return o, err
}

// rerender observes and renders once more when the template saw, for a
// child it renders, another object than the one that child is: the old
// object of a renamed child, or its object at another version than the one
// rendered (now watched, so listed at it). Then the children's observed
// objects are the ones the template asked for.
func (r *run) rerender(ctx context.Context) (outcome, error) {
	if !misread(r.res.Children, r.v.owned, r.v.observed) {
		return outcome{}, nil
	}
	r.rerendered = true
	if err := r.observe(ctx, nil); err != nil {
		return outcome{}, err
	}
	r.v.observed = renderedView(r.res.Children, r.v.owned, r.v.observed)
	if o, err := r.render(ctx); err != nil || r.res == nil {
		return o, err
	}
	// Should this render want yet other objects, they are what the rest of
	// the reconcile (recreate) takes as each child's observed object.
	r.v.observed = renderedView(r.res.Children, r.v.owned, r.v.observed)
	return r.renderer.watchKinds(ctx, r.cr, r.res)
}

// inputs are what stage 3 decides on, and the status records (resync.go).
func (r *run) inputs() inputs {
	return inputs{kind: r.kind, cr: r.cr, v: r.v, referenced: r.referenced, stamp: r.stamp, manager: r.manager}
}

// converged is true when the CR is ready and this reconcile found nothing
// to change or wait for.
func (r *run) converged() bool {
	if r.skipped {
		return true
	}
	return r.stalled == nil && r.res != nil && r.res.Ready && r.progressing() == ""
}

// emitEvents emits the Events of this reconcile: one per kind of action
// (not one per child, to keep the API requests per CR low), one for a
// stall, and the fields of its spec the template never sees
// (unrendered.go).
func (r *run) emitEvents() {
	r.events.actions(r.cr, r.did)
	r.events.stall(r.cr, r.stalled)
	r.events.unrendered(r.kind, r.cr, r.quiet || r.observeFailed != nil || r.statusFailed)
}

// result asks for the CR again after a while when it waits for something
// no watch reports; an error brings it back anyway (with backoff).
func (r *run) result(err error) ctrl.Result {
	if err == nil && r.stalled != nil && r.stalled.reason == wellknown.ReasonChildConflict {
		return ctrl.Result{RequeueAfter: conflictRecheck} // ownership.go
	}
	if err == nil && r.stalled != nil && r.stalled.reason == wellknown.ReasonForbidden {
		return ctrl.Result{RequeueAfter: forbiddenRecheck} // forbidden.go
	}
	return ctrl.Result{}
}
