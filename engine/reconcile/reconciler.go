package reconcile

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// IndexOwnerUID is the cache index of children by the uid of their parent.
const IndexOwnerUID = "cueop.ownerUID"

// Reconciler converges the CRs of one kind. It is safe for concurrent use;
// a new template revision is rolled out through Rollout.
type Reconciler struct {
	// Rollout chooses the revision each CR is rendered with: NewReconciler
	// makes it, keeping each CR's turn in the CR's record (crs.go).
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
	r := &Reconciler{}
	r.Rollout = newRollout(k, &r.crs) // its turns are in the CRs' records
	return r
}

// Kind is the newest revision of the kind.
func (r *Reconciler) Kind() *template.Kind { return r.Rollout.Current() }

// SetKind rolls k out to the CRs of the kind.
func (r *Reconciler) SetKind(k *template.Kind) { r.Rollout.SetKind(k) }

// Reconcile converges one CR: a CR being deleted takes the deletion path
// (deletion.go), any other the stages of a run (run.go: reconcileLive); a
// CR gone is forgotten.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.Refs.bind(&r.crs) // what each CR references is in its record
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

// newRun is a run of a reconcile of cr with k: the one place that hands
// each stage what it needs of the reconciler.
func (r *Reconciler) newRun(k *template.Kind, cr *unstructured.Unstructured, log logger) *run {
	manager := r.fieldManager()
	t := tally{obs: r.Observer, kind: k.Resource.Kind, did: actions{}}
	rel := releaser{applier: r.Applier, host: r.Host, cr: cr}
	res := resolver{eval: r.evaluator(), opts: r.Options, cluster: r.Cluster, refs: r.Refs, bound: r.inputBound()}
	return &run{
		kind: k, cr: cr, log: log, host: r.Host, opts: r.Options, stamp: r.stamp(), manager: manager,
		observer: observer{children: r.Children, scheme: r.Scheme, cluster: r.Cluster, manager: manager},
		resolver: res,
		renderer: renderer{eval: res.eval, opts: r.Options, memo: &r.crs, bound: res.bound,
			labels: r.ChildLabels, cluster: r.Cluster, tally: t, load: res.load},
		fins:   r.finalizers(),
		writer: childWriter{applier: r.Applier, records: &r.crs, rel: rel, modes: r.bindingModes(), tally: t, cr: cr},
		pruner: pruner{applier: r.Applier, cluster: r.Cluster, opts: r.Options, rel: rel, tally: t, log: log, cr: cr},
		status: statusWriter{client: r.Client, live: r.Live, recorder: r.Recorder, records: &r.crs, manager: manager, log: log},
		events: eventer{rec: r.Recorder, opts: r.Options},
		tally:  t,
		v:      &view{},
		did:    t.did,
	}
}

// finalizers writes cueop's finalizers on the CRs (finalizers.go).
func (r *Reconciler) finalizers() finalizers {
	return finalizers{client: r.Client, records: &r.crs, manager: r.fieldManager()}
}

func (r *Reconciler) evaluator() render.Evaluator {
	if r.Evaluator == nil {
		return render.InProcess{}
	}
	return r.Evaluator
}
