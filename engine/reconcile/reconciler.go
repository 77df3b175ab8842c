package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// IndexOwnerUID is the cache index of children by the uid of their parent.
const IndexOwnerUID = "cueop.ownerUID"

// Reconciler converges the CRs of one kind. It is safe for concurrent use;
// a new template revision is rolled out through Rollout.
type Reconciler struct {
	// Rollout chooses the revision each CR is rendered with.
	Rollout *Rollout

	// Parents reads the CRs (an unfiltered cache).
	Parents client.Reader
	// Children reads children from a cache indexed by IndexOwnerUID.
	Children client.Reader
	// Scheme, when set, names the child kinds Children caches as typed
	// objects; the others are cached unstructured.
	Scheme *runtime.Scheme
	// Client writes the CR status.
	Client client.Client
	// Applier writes the children.
	Applier *apply.Applier
	// Options are the administrator's render policy.
	Options render.Options
	// Evaluator runs the renders and the references' evaluations; nil
	// means in process (render.InProcess), for tests of trusted templates.
	// The operator's runs them in killable worker processes.
	Evaluator render.Evaluator
	// Recorder emits Events on the CR; nil means none.
	Recorder record.EventRecorder
	// Observer is told about each reconcile; nil means nobody.
	Observer Observer
	// Cluster is what the reconciler reads and watches through the
	// operator; Host what it asks and tells the operator (cluster.go).
	Cluster Cluster
	Host    Host
	// Refs learns which CR reads what objects (references.go), for the
	// watch of those objects to wake them.
	Refs *RefIndex
	// ChildLabels are set on every child besides the engine's own labels
	// (a sharded replica's shard label: childlabels.go).
	ChildLabels map[string]string
	// Live reads a CR from the API server, whole managedFields included,
	// for a status write refused for an entry at a version not served
	// (staleentries.go); nil: that write is left to fail.
	Live client.Reader

	crs crs // what is kept of each CR between its reconciles (crs.go)

	stampOnce sync.Once // resync.go
	stampText string
}

// Observer receives what a reconcile did, for metrics.
type Observer interface {
	Rendered(kind string, d time.Duration, err error)
	Applied(kind string, action apply.Action, err error)
}

// NewReconciler returns a reconciler serving k.
func NewReconciler(k *template.Kind) *Reconciler {
	return &Reconciler{Rollout: NewRollout(k)}
}

// Kind is the newest revision of the kind.
func (r *Reconciler) Kind() *template.Kind { return r.Rollout.Current() }

// SetKind rolls k out to the CRs of the kind.
func (r *Reconciler) SetKind(k *template.Kind) { r.Rollout.SetKind(k) }

// Reconcile converges one CR: a CR being deleted takes the deletion path
// (deletion.go), any other the stages of converge (reconcileLive); a CR
// gone is forgotten.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(r.Kind().Resource.GroupVersionKind())
	if err := r.Parents.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName, true)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cr.GetDeletionTimestamp() != nil {
		return r.deleted(ctx, req.NamespacedName, cr) // deletion.go
	}
	return r.reconcileLive(ctx, req, cr)
}

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
	run := &run{r: r, kind: k, cr: cr, log: log.FromContext(ctx)}
	// A denial stalls the CR, and is no error (forbidden.go).
	o, err := run.forbidden(run.converge(ctx))
	run.note(o)
	run.note(run.unfinished(err)) // pending.go
	// 7. status
	serr := run.writeStatus(ctx)
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

// run is the state of one reconcile of one CR.
type run struct {
	r    *Reconciler
	kind *template.Kind
	cr   *unstructured.Unstructured
	log  interface {
		Info(msg string, kv ...any)
		Error(err error, msg string, kv ...any)
	}

	observed map[string]*unstructured.Unstructured // what the template sees, by child id
	owned    liveChildren                          // every child the CR controls
	// sources are the listed objects of the children observe converted
	// only in part, by their partial view (partialview.go).
	sources map[*unstructured.Unstructured]runtime.Object
	wholes  map[*unstructured.Unstructured]*unstructured.Unstructured // converted by whole
	// observeFailed is why the children could not be listed: the reconcile
	// knows nothing new about them and must not say it converged.
	observeFailed error
	result_       *render.Result
	// skipped: the status records a convergence at these very inputs and
	// children, so nothing was rendered or applied (resync.go).
	skipped bool
	// rerendered: the children were observed and rendered twice (rerender).
	rerendered bool
	actions    map[apply.Action][]string
	pending    string // why the current inputs were not rendered (pending.go)
	// quiet: the render was refused as busy within its grace (busy.go):
	// the status is not written for it.
	quiet bool
	// statusFailed: the status write failed, so the generation it would
	// record is not recorded (and the reconcile is retried).
	statusFailed bool

	referenced map[string]render.Referenced // what the references resolved to
	held       map[string]bool              // children of waves not applied yet
	waveWait   string                       // which child the next wave waits for

	// What the stages implied for the conditions, set by note alone
	// (outcome.go).
	stalled  *stall
	waiting  string // why the CR is not converged yet, if it is not (wait)
	missing  string // the references not found, if any
	deleting string // which wave a deletion waits for
}

// converge runs the stages of a reconcile of a CR that is not being
// deleted (deletion.go), in order. Each stage returns what it implies for
// the CR's conditions (outcome.go), which note records; a stage that
// stalls the CR, or fails, ends it. Reconcile writes the status (7).
func (r *run) converge(ctx context.Context) error {
	// 0. admit: the kind may act in the namespace, the CR is not stalled
	// over its render budget.
	if r.note(r.admit()) {
		return nil
	}
	// 1. observe the children.
	if err := r.observe(ctx, r.viewKeys()); err != nil { // partialview.go
		r.observeFailed = err
		return err
	}
	// 2. resolve the references.
	o, err := r.resolve(ctx) // references.go
	if r.note(o) || err != nil || r.missing != "" {
		return err
	}
	// 3. decide: a CR settled at these very inputs is left as it is.
	if r.skipped = r.settled(); r.skipped { // resync.go
		if obs, ok := r.r.Observer.(interface{ Settled(kind string) }); ok {
			obs.Settled(r.kind.Resource.Kind)
		}
		return nil
	}
	// 4. render, and again when the template saw other objects than its
	// children.
	o, err = r.render(ctx)
	if r.note(o) || err != nil || r.result_ == nil {
		return err
	}
	if o, err = r.watchKinds(ctx); r.note(o) || err != nil {
		return err
	}
	o, err = r.rerender(ctx)
	if r.note(o) || err != nil || r.result_ == nil {
		return err
	}
	// 5. apply: finalizers first, then the children, wave by wave.
	if err := r.syncFinalizers(ctx); err != nil { // finalizers.go
		return err
	}
	r.gateWaves(ctx)         // waves.go
	o, err = r.applyAll(ctx) // converge.go
	if r.note(o) || err != nil {
		return err
	}
	// 6. prune what the render no longer has.
	return r.prune(ctx)
}

// admit is the stall of a CR whose kind may not act in its namespace
// (forbidden.go) or whose render ran out of budget (budget.go).
func (r *run) admit() outcome {
	if s := r.notBound(); s != nil {
		return stalledBy(s)
	}
	return stalledBy(budgetStall(r.cr, r.kind))
}

// render renders the CR with what observe saw. A render error the template
// or the spec must fix stalls the CR (r.result_ stays nil).
func (r *run) render(ctx context.Context) (outcome, error) {
	start := time.Now()
	// Every input of the render: the observed children and the referenced
	// objects; the memo reuses the last result when their digest is the same.
	in := render.Inputs{Kind: r.kind, Parent: r.cr, Observed: r.observed, Referenced: r.referenced}
	ev := boundedEvaluator{r.r.evaluator(), r.subject(), r.r.inputBound()} // inputsize.go
	res, hit, err := r.r.crs.render(ctx, ev, client.ObjectKeyFromObject(r.cr), in, r.r.options(), r.loadReferenced(ctx))
	if !hit {
		r.r.rendered(r.kind.Resource.Kind, time.Since(start), err)
	}
	var rerr *render.Error
	if errors.As(err, &rerr) {
		r.result_ = nil
		return stallOf(rerr.Reason, rerr.Error()), nil
	}
	key := client.ObjectKeyFromObject(r.cr)
	if err != nil {
		r.notRendered("render not run, retrying: " + firstLine(err.Error()))
		r.quiet = isTransient(err) && r.r.crs.busyQuiet(key, time.Now()) // busy.go
		return outcome{}, fmt.Errorf("%s: render: %w", r.subject(), err)
	}
	r.r.crs.busyEnd(key)
	if res.ReadyByDefault && len(r.sources) > 0 {
		// The default readiness judges the children whole (partialview.go).
		res = render.Reuse(render.Inputs{Kind: r.kind, Observed: r.wholeObserved()}, res)
	}
	r.result_ = r.r.withChildLabels(res) // not ready: the CR waits (wait)
	return outcome{}, nil
}

// rerender observes and renders once more when the template saw, for a
// child it renders, another object than the one that child is: the old
// object of a renamed child, or its object at another version than the one
// rendered (now watched, so listed at it). Then the children's observed
// objects are the ones the template asked for.
func (r *run) rerender(ctx context.Context) (outcome, error) {
	if !misread(r.result_.Children, r.owned, r.observed) {
		return outcome{}, nil
	}
	r.rerendered = true
	if err := r.observe(ctx, nil); err != nil {
		r.result_, r.observeFailed = nil, err
		return outcome{}, err
	}
	r.observed = renderedView(r.result_.Children, r.owned, r.observed)
	if o, err := r.render(ctx); err != nil || r.result_ == nil {
		return o, err
	}
	// Should this render want yet other objects, they are what the rest of
	// the reconcile (recreate) takes as each child's observed object.
	r.observed = renderedView(r.result_.Children, r.owned, r.observed)
	return r.watchKinds(ctx)
}

// watchKinds makes sure the kinds of every rendered child are watched, at
// the version rendered. A kind not watched before has no children to
// observe: it had none managed by cueop when the operator started, and only
// this process creates them.
func (r *run) watchKinds(ctx context.Context) (outcome, error) {
	if r.r.Cluster == nil {
		return outcome{}, nil
	}
	var done []schema.GroupVersionKind
	for _, c := range r.result_.Children {
		gvk := c.Object.GroupVersionKind()
		if slices.Contains(done, gvk) {
			continue
		}
		done = append(done, gvk)
		if err := deny("watch "+gvk.Kind+" children", r.r.Cluster.WatchKind(ctx, gvk)); err != nil { // forbidden.go
			return waitFor("watch failed, retrying: " + err.Error()), fmt.Errorf("%s: %w", r.subject(), err)
		}
	}
	return outcome{}, nil
}

// converged is true when the CR is ready and this reconcile found nothing
// to change or wait for.
func (r *run) converged() bool {
	if r.skipped {
		return true
	}
	return r.stalled == nil && r.result_ != nil && r.result_.Ready && r.progressing() == ""
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

func (r *run) subject() string {
	return fmt.Sprintf("%s %s/%s", r.cr.GetKind(), r.cr.GetNamespace(), r.cr.GetName())
}

func (r *Reconciler) options() render.Options { return r.Options }

func (r *Reconciler) evaluator() render.Evaluator {
	if r.Evaluator == nil {
		return render.InProcess{}
	}
	return r.Evaluator
}

func (r *Reconciler) rendered(kind string, d time.Duration, err error) {
	if r.Observer != nil {
		r.Observer.Rendered(kind, d, err)
	}
}

func (r *Reconciler) applied(kind string, a apply.Action, err error) {
	if r.Observer != nil {
		r.Observer.Applied(kind, a, err)
	}
}
