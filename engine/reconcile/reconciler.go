// The Reconciler: what it is handed (its fields, NewReconciler), what it asks
// of the operator (Cluster, Host), what it keeps of each CR between
// reconciles (crs: one record per CR, one forget), and Reconcile, which sends
// a CR down its live path (run.go) or its deletion (deletion.go).
//
// It must not run a stage itself: newRun hands each stage what it needs, and
// run.go runs them.

package reconcile

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	// makes it, keeping each CR's turn in the CR's record.
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
	// operator; Host what it asks and tells the operator.
	Cluster Cluster
	Host    Host
	// Refs learns which CR reads what objects (references.go), for the
	// watch of those objects to wake them.
	Refs *RefIndex
	// ChildLabels are set on every child besides the engine's own labels
	// (a sharded replica's shard label: rendering.go).
	ChildLabels map[string]string
	// Live reads a CR from the API server, whole managedFields included,
	// for a status write refused for an entry at a version not served
	// (status.go); nil: that write is left to fail.
	Live client.Reader

	crs crs // what is kept of each CR between its reconciles

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

// finalizers writes cueop's finalizers on the CRs (deletion.go).
func (r *Reconciler) finalizers() finalizers {
	return finalizers{client: r.Client, records: &r.crs, manager: r.fieldManager()}
}

func (r *Reconciler) evaluator() render.Evaluator {
	if r.Evaluator == nil {
		return render.InProcess{}
	}
	return r.Evaluator
}

// Cluster is what a reconciler reads and watches through the operator,
// beside its clients: the operator's identity of the kind serves it. A
// reconciler without one (tests) lists no children, watches no kind, reads
// no reference and no StorageClass, and confirms its prunes with its cache.
type Cluster interface {
	// ChildKinds returns the kinds whose children Reconciler.Children
	// caches: a reconcile lists the children of each (observe.go).
	ChildKinds() []schema.GroupVersionKind
	// WatchKind makes Reconciler.Children cache the children of a kind at
	// a version; it is called for every kind and version a render produces
	// before its children are applied.
	WatchKind(ctx context.Context, gvk schema.GroupVersionKind) error
	// Owned lists a CR's children from the API server, never the cache
	// (deletion.go: OwnedFunc): what a finalizer is taken off on, and what
	// confirms a prune.
	Owned(ctx context.Context, ns string, owner types.UID) ([]*unstructured.Unstructured, error)
	// BindingMode reads a StorageClass's volumeBindingMode, for the gates
	// (converge.go: BindingModes).
	BindingMode(ctx context.Context, class string) (string, error)
	// Read lists the objects of a kind templates reference, by their
	// metadata; Load reads one of them whole, for a render (references.go:
	// ReadFunc, LoadFunc).
	Read(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error)
	Load(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// Host is what a reconciler asks and tells the operator that runs its
// kind. A reconciler without one (tests) acts in every namespace, releases
// children with no proof (and adopts none by its released-from mark), and
// tells nobody of its status writes.
type Host interface {
	// Bound says why the kind may not act in a namespace, nil when it may
	// (forbidden.go: wellknown.ReasonNamespaceNotBound).
	Bound(namespace string) error
	// ReleaseKey is the key of the proofs a released child carries, that
	// cueop released it (converge.go).
	ReleaseKey(ctx context.Context) ([]byte, error)
	// StatusFailing is told the kind's state of its status writes when the
	// first CR's fails and when the last failing one is written
	// (status.go).
	StatusFailing(ctx context.Context, st StatusFailing)
}

// bindingModes reads StorageClasses for the gates; nil: a Pending claim is
// not ready for them.
func (r *Reconciler) bindingModes() BindingModes {
	if r.Cluster == nil {
		return nil
	}
	return r.Cluster.BindingMode
}

// tellStatusFailing tells the host the kind's state of its status writes.
func (r *Reconciler) tellStatusFailing(ctx context.Context, st StatusFailing) {
	if r.Host != nil {
		r.Host.StatusFailing(ctx, st)
	}
}

// crs is what the reconciler keeps of each CR between its reconciles: one
// record per CR, in one map under one lock, its rollout turn (Rollout) and
// what it references (RefIndex) included. A record that holds nothing is
// dropped, so memory is bounded by the CRs that have something to keep;
// forget drops what a CR being deleted or gone no longer needs.
type crs struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*crRecord
	// refNS indexes, by namespace, the records that hold references, for
	// RefIndex.Match; update keeps it.
	refNS map[string]map[types.NamespacedName]bool
	// failing counts the records whose statusErr is set; told: the kind's
	// state of its status writes was told once (status.go).
	failing int
	told    bool
	// hits and misses count the render memo's reuses and renders, for
	// tests and metrics (rendering.go).
	hits, misses int64
}

// crRecord is what the reconciler keeps of one CR.
type crRecord struct {
	// behind is the resourceVersion the cache held when cueop last wrote
	// the CR's status or finalizers, until the cache moves past it
	// (status.go: stale).
	behind string
	// statusErr is why the CR's last status write failed, "" when it did
	// not (status.go).
	statusErr string
	// memo is the digest of the CR's last successful render's inputs and
	// that render's result, packed (rendering.go).
	memo *memoEntry
	// conflicts are the children its last reconcile found in conflict
	// (converge.go).
	conflicts map[string]bool
	// busySince is when a series of busy refusals of its render began
	// (rendering.go).
	busySince time.Time
	// finalizedUID is the uid of the CR being deleted whose last finalizer
	// cueop took off, until the cache no longer holds it (deletion.go).
	finalizedUID types.UID
	// turn is its place in its kind's rollout (rollout.go), the Rollout's
	// to change and to forget.
	turn turn
	// refs are what it references, and the key of what they were computed
	// from (references.go).
	refs refEntry
}

func (c *crRecord) empty() bool {
	return c.behind == "" && c.statusErr == "" && c.memo == nil && len(c.conflicts) == 0 &&
		c.busySince.IsZero() && c.finalizedUID == "" && c.turn == (turn{}) && !c.refs.any()
}

// read calls f with key's record (a zero one when there is none), under
// the lock; f must not keep it.
func (s *crs) read(key types.NamespacedName, f func(*crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.m[key]
	if c == nil {
		c = &crRecord{}
	}
	f(c)
}

// update calls f with key's record, under the lock, and drops the record
// when f leaves it empty. The caller holds the lock.
func (s *crs) update(key types.NamespacedName, f func(*crRecord)) {
	c := s.m[key]
	if c == nil {
		c = &crRecord{}
	}
	had := c.refs.any()
	f(c)
	if has := c.refs.any(); has != had {
		s.indexRefs(key, has)
	}
	switch {
	case c.empty():
		delete(s.m, key)
	case s.m == nil:
		s.m = map[types.NamespacedName]*crRecord{key: c}
	default:
		s.m[key] = c
	}
}

// indexRefs files key under its namespace in refNS, or takes it out.
func (s *crs) indexRefs(key types.NamespacedName, has bool) {
	ns := s.refNS[key.Namespace]
	switch {
	case has && ns == nil:
		if s.refNS == nil {
			s.refNS = map[string]map[types.NamespacedName]bool{}
		}
		s.refNS[key.Namespace] = map[types.NamespacedName]bool{key: true}
	case has:
		ns[key] = true
	default:
		delete(ns, key)
		if len(ns) == 0 {
			delete(s.refNS, key.Namespace)
		}
	}
}

// each calls f with every record, under the lock, and drops those f
// leaves empty; f must not change what records reference (refs).
func (s *crs) each(f func(types.NamespacedName, *crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, c := range s.m {
		f(key, c)
		if c.empty() {
			delete(s.m, key)
		}
	}
}

// change is update with the lock taken.
func (s *crs) change(key types.NamespacedName, f func(*crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update(key, f)
}

// forget drops what is kept of key between reconciles: all of it when the
// CR is gone; while it is being deleted, all but that cueop took its last
// finalizer off and that its last status write failed. Its rollout turn
// is left to its Rollout (Rollout.Forget), which counts the turns. It
// returns the kind's state of its status writes and whether it moved
// (status.go).
func (s *crs) forget(key types.NamespacedName, gone bool) (StatusFailing, bool) {
	if !gone {
		s.change(key, func(c *crRecord) {
			*c = crRecord{statusErr: c.statusErr, finalizedUID: c.finalizedUID, turn: c.turn}
		})
		return StatusFailing{}, false
	}
	st, moved := s.setStatus(key, "")
	s.change(key, func(c *crRecord) { *c = crRecord{turn: c.turn} })
	return st, moved
}

// forget drops what the reconciler keeps of the CR key between reconciles,
// its record (what it references included): all of it once the CR is gone
// (gone), but that its finalizers came off and that its status write
// failed while it is being deleted; its rollout turn first, as the rollout
// counts the turns.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName, gone bool) {
	r.Rollout.Forget(key)
	if st, moved := r.crs.forget(key, gone); moved && ctx.Err() == nil {
		r.tellStatusFailing(ctx, st)
	}
}
