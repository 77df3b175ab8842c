// One reconcile of a live CR, top to bottom: reconcileLive and converge run
// the stages in order, each in its one file: 0 admit (forbidden.go),
// 1 observe (observe.go), 2 resolve (references.go), 3 decide (resync.go),
// 4 render (rendering.go), 5 apply (converge.go; finalizers: deletion.go),
// 6 prune (prune.go), 7 status (status.go), then the Events (events.go) and
// the rollout's bookkeeping (rollout.go). What a stage implies for the CR's
// conditions is an outcome, recorded by note alone.
//
// It must not do a stage's work: it orders the stages and keeps what they
// found.

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
	run.note(run.unfinished(err)) // status.go
	// 7. status
	serr := run.writeStatus(ctx) // status.go
	run.statusFailed = serr != nil
	if serr != nil {
		err = errors.Join(err, serr)
	}
	r.statusWritten(ctx, cr, serr) // status.go
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
	return quietly(run.result(err), err) // rendering.go
}

// run is one reconcile of one CR: its stages, each given what it needs
// (Reconciler.newRun), and what they found, did and implied, from which
// the status (status.go) and the Events are made.
type run struct {
	kind *template.Kind
	cr   *unstructured.Unstructured
	log  logger

	// The stages, in the order converge runs them.
	host     Host           // 0. forbidden.go: may the kind act in the namespace
	observer observer       // 1. observe.go
	resolver resolver       // 2. references.go
	stamp    string         // 3. resync.go: what renders alike besides the inputs
	renderer renderer       // 4. rendering.go
	fins     finalizers     // 5. deletion.go
	writer   childWriter    // 5. converge.go
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
	//.
	stalled  *stall
	waiting  string // why the CR is not converged yet, if it is not (wait)
	missing  string // the references not found, if any
	deleting string // which wave a deletion waits for
	pending  string // why the current inputs were not rendered (status.go)
	quiet    bool   // busy for a moment: no status write (rendering.go)
}

// logger is what a reconcile logs with.
type logger interface {
	Info(msg string, kv ...any)
	Error(err error, msg string, kv ...any)
}

// converge runs the stages of a reconcile of a CR that is not being
// deleted (deletion.go), in order. Each stage returns what it implies for
// the CR's conditions, which note records; a stage that
// stalls the CR, or fails, ends it. reconcileLive writes the status (7).
func (r *run) converge(ctx context.Context) error {
	// 0. admit (forbidden.go): the kind may act in the namespace, the CR
	// is not stalled over its render budget.
	if r.note(stalledBy(notBound(r.host, r.cr))) || r.note(stalledBy(budgetStall(r.cr, r.kind))) {
		return nil
	}
	// 1. observe the children (observe.go).
	if err := r.observe(ctx, viewKeys(r.kind)); err != nil {
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
	// 5. apply: finalizers first (deletion.go), then the children, wave
	// by wave (converge.go).
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
// (events.go).
func (r *run) emitEvents() {
	r.events.actions(r.cr, r.did)
	r.events.stall(r.cr, r.stalled)
	r.events.unrendered(r.kind, r.cr, r.quiet || r.observeFailed != nil || r.statusFailed)
}

// result asks for the CR again after a while when it waits for something
// no watch reports; an error brings it back anyway (with backoff).
func (r *run) result(err error) ctrl.Result {
	if err == nil && r.stalled != nil && r.stalled.reason == wellknown.ReasonChildConflict {
		return ctrl.Result{RequeueAfter: conflictRecheck} // converge.go
	}
	if err == nil && r.stalled != nil && r.stalled.reason == wellknown.ReasonForbidden {
		return ctrl.Result{RequeueAfter: forbiddenRecheck} // forbidden.go
	}
	return ctrl.Result{}
}

// outcome is what a stage of a reconcile implies for the CR's conditions,
// beside what it did; the zero value implies nothing. Each stage returns
// one, and note records it: the one place a run's stall, wait, missing
// references and deletion wait are set, which conditions (status.go) turns
// into the CR's conditions.
type outcome struct {
	// stall: the CR cannot progress without a change of spec or template
	// (Stalled=True).
	stall *stall
	// wait: why the CR is not converged yet (Reconciling=True).
	wait string
	// missing: the references not found, one line each; the CR waits for
	// them, not rendered (wellknown.ReasonReferenceNotFound).
	missing string
	// deleting: which wave the deletion of the CR waits for (deletion.go).
	deleting string
	// pending: why the CR's current inputs were not rendered; it waits,
	// and says so (status.go).
	pending string
	// quiet: the render was refused as busy within its grace (rendering.go):
	// the status is not written for it.
	quiet bool
}

// stall is why a CR cannot progress without a change of spec or template.
type stall struct {
	reason, message string
}

// stallOf is the outcome of a stall for reason.
func stallOf(reason, message string) outcome {
	return outcome{stall: &stall{reason: reason, message: message}}
}

// stalledBy is the outcome of s, a stall or nil.
func stalledBy(s *stall) outcome { return outcome{stall: s} }

// waitFor is the outcome of a CR that waits for why.
func waitFor(why string) outcome { return outcome{wait: why} }

// note records what o implies, each part replacing what an earlier stage
// said of the same, and tells whether the CR is stalled: the stages after
// a stall do not run.
func (r *run) note(o outcome) (stalled bool) {
	if o.pending != "" {
		r.pending = o.pending
	}
	r.quiet = r.quiet || o.quiet
	if o.stall != nil {
		r.stalled = o.stall
	}
	if o.wait != "" {
		r.waiting = o.wait
	}
	if o.missing != "" {
		r.missing = o.missing
	}
	if o.deleting != "" {
		r.deleting = o.deleting
	}
	return r.stalled != nil
}

// wait is why the CR is not converged yet, "" when it is: what a stage
// said, else, for a render whose children are not all ready, that.
func (r *run) wait() string {
	if r.waiting == "" && r.res != nil && !r.res.Ready {
		return "waiting for children to be ready"
	}
	return r.waiting
}
