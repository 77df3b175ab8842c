package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// kindRunner builds, runs and stops the controller of one kind: its
// reconciler wired to the kind's identity (identities.go), the watches
// that wake it, the pacing of its rollouts. It keeps no record of the
// kinds: that is kindLifecycle's, which asks it to start and stop them.
type kindRunner struct {
	mgr      manager.Manager // its client, scheme, API reader and REST mapper
	parents  cache.Cache
	ids      *identities
	crds     *crdWriter
	keys     *releaseKeys
	recorder record.EventRecorder
	metrics  *Metrics
	log      logr.Logger
	eval     render.Evaluator
	// opts are the operator's options, read only.
	opts Options
	// controllers counts the running controllers, which Operator.Run
	// waits for.
	controllers *sync.WaitGroup
}

// kindController is the running controller of one kind.
type kindController struct {
	rec     *reconcile.Reconciler
	ctrl    controller.Controller
	cancel  context.CancelFunc
	stopped chan struct{} // closed when the controller's workers have returned
	resync  chan event.GenericEvent
	crdName string
	b       *bundle // the identity it reads and writes children and references as (identities.go)
}

// start builds k's controller, its watches and pacing, and runs it until
// stopController; the caller records it as serving.
func (kr *kindRunner) start(ctx context.Context, k *template.Kind) (*kindController, error) {
	b, err := kr.ids.forKind(ctx, k) // identities.go
	if err != nil {
		return nil, err
	}
	rec := reconcile.NewReconciler(k)
	rec.Parents, rec.Children, rec.Client, rec.Scheme = kr.parents, b.cache, kr.mgr.GetClient(), kr.mgr.GetScheme()
	rec.Cluster, rec.Host = clusterOf(b), kr.hostOf(k) // reconcilerhooks.go
	rec.Applier, rec.Recorder, rec.Observer = b.applier, kr.recorder, kr.metrics
	rec.Options.AllowedKinds, rec.Options.Scope = kr.opts.AllowedKinds, kr.scope
	rec.Options.Budget = kr.opts.Budget
	rec.Evaluator = kr.eval
	rec.Options.ReadableKinds, rec.Options.DataKinds = kr.opts.ReadableKinds, kr.opts.DataKinds
	rec.ChildLabels = b.childLabels()
	rec.Live = kr.mgr.GetAPIReader() // reconcile/status.go: repairEntries
	log := kr.log.WithValues("kind", k.Resource.Kind)
	c, err := controller.NewUnmanaged("cueop-"+k.Name, controller.Options{
		Reconciler: rec, MaxConcurrentReconciles: kr.opts.MaxConcurrent,
		SkipNameValidation: ptr.To(true), Logger: log,
		LogConstructor: reconcileLogger(log, "cueop-"+k.Name), // lazylog.go
		RateLimiter:    rateLimiter(),
	})
	if err != nil {
		kr.ids.release(b, nil)
		return nil, fmt.Errorf("kind %s: controller: %w", k.Name, err)
	}
	kc := &kindController{rec: rec, ctrl: c, resync: make(chan event.GenericEvent), crdName: k.Resource.CRDName(), b: b}
	if waitMapped(ctx, kr.mgr.GetRESTMapper(), k.Resource.GroupVersionKind()) && !kr.opts.InstallCRDs { // mapper.go
		kr.crds.pointLive(ctx, kc.crdName) // a CRD applied after cueop started
	}
	kr.pace(ctx, kc, k)
	if err := kr.watch(c, k, kc); err != nil {
		kr.ids.release(b, nil)
		return nil, fmt.Errorf("kind %s: %w", k.Name, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	kc.cancel, kc.stopped = cancel, make(chan struct{})
	kr.controllers.Add(1)
	go func() {
		defer kr.controllers.Done()
		defer close(kc.stopped)
		if err := c.Start(cctx); err != nil {
			kr.log.Error(err, "controller stopped", "kind", k.Resource.Kind)
		}
	}()
	kr.log.Info("serving kind", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision)
	return kc, nil
}

// Retry backoff of a CR whose reconcile fails: exponential from
// retryBaseDelay, capped at retryMaxDelay, so a CR that keeps failing costs a
// request every few minutes, not a storm. A real change (spec edit, child
// event, new revision) still wakes it at once.
const (
	retryBaseDelay = 200 * time.Millisecond
	retryMaxDelay  = 5 * time.Minute
)

func rateLimiter() workqueue.TypedRateLimiter[ctrlreconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](retryBaseDelay, retryMaxDelay)
}

// watch makes c reconcile a CR when it changes, when a child it controls
// changes (of the child kinds watched, now and later), and when its kind is
// resynced.
func (kr *kindRunner) watch(c controller.Controller, k *template.Kind, kc *kindController) error {
	parent := parentObject(k.Resource.GroupVersionKind())
	srcs := []source.Source{
		source.Kind[client.Object](kr.parents, parent, &handler.EnqueueRequestForObject{}),
		source.Channel(kc.resync, &handler.EnqueueRequestForObject{}),
	}
	for _, s := range srcs {
		if err := c.Watch(s); err != nil {
			return err
		}
	}
	if err := kc.b.serveReferences(kc); err != nil { // references.go
		return err
	}
	return kc.b.children.addController(kc)
}

// pace sets up the rollout of new revisions of k's kind: paced by
// RolloutMaxInFlight, woken through the resync channel, and halted with an
// Event on the kind's CRD.
func (kr *kindRunner) pace(ctx context.Context, kc *kindController, k *template.Kind) {
	ro := kc.rec.Rollout
	ro.MaxInFlight = kr.opts.RolloutMaxInFlight
	ro.OnWake = func(key types.NamespacedName) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(k.Resource.GroupVersionKind())
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		go func() {
			select {
			case kc.resync <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
			}
		}()
	}
	ro.OnHalt = func(bad *template.Kind, stalled []types.NamespacedName) {
		msg := fmt.Sprintf("rollout of revision %s halted: %d CRs stalled on it (%v); CRs not yet moved stay on the previous revision until the template is fixed",
			bad.Revision, len(stalled), stalled)
		kr.log.Error(nil, msg, "kind", bad.Resource.Kind)
		kr.crds.event(ctx, kc.crdName, wellknown.CRDReasonRolloutHalted, msg)
	}
}

// stopController stops the controller kc, leaving its converter served;
// the caller forgets it.
func (kr *kindRunner) stopController(ctx context.Context, kc *kindController) {
	kc.cancel()
	kc.b.children.removeController(kc)
	kc.b.reads.removeController(kc)
	kr.ids.release(kc.b, kc.stopped) // identities.go
	k := kc.rec.Kind()
	parent := parentObject(k.Resource.GroupVersionKind())
	if err := kr.parents.RemoveInformer(ctx, parent); err != nil {
		kr.log.Error(err, "remove informer", "kind", k.Resource.Kind)
	}
	kr.metrics.removed(k)
}

// resyncAll enqueues every CR of k's kind, after a template change.
func (kr *kindRunner) resyncAll(ctx context.Context, kc *kindController, k *template.Kind) {
	list := &unstructured.UnstructuredList{}
	gvk := k.Resource.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := kr.parents.List(ctx, list); err != nil {
		kr.log.Error(err, "list for resync", "kind", gvk.Kind)
		return
	}
	for i := range list.Items {
		select {
		case kc.resync <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// mapped tells whether the API server serves k's kind at its version.
func (kr *kindRunner) mapped(k *template.Kind) bool {
	gvk := k.Resource.GroupVersionKind()
	_, err := kr.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// scope asks the API server (through the cached REST mapper) whether a
// child kind is namespaced.
func (kr *kindRunner) scope(gk schema.GroupKind) (namespaced, known bool) {
	m, err := kr.mgr.GetRESTMapper().RESTMapping(gk)
	if err != nil {
		return false, false
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, true
}

// hostOf is k's reconcile.Host (reconcilerhooks.go).
func (kr *kindRunner) hostOf(k *template.Kind) kindHost {
	return kindHost{keys: kr.keys, bound: kr.boundIn(k), failing: kr.crds.statusFailing(k.Resource.CRDName())}
}

// boundIn is the reconcile.Host.Bound of k's kind: nil (bound
// everywhere) without Options.Identities, else why the kind may not act in
// a namespace the administrator did not bind it in.
func (kr *kindRunner) boundIn(k *template.Kind) func(namespace string) error {
	ids := kr.opts.Identities
	if ids == nil {
		return nil
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	return func(ns string) error {
		if ids.Bound(gk, ns) {
			return nil
		}
		return fmt.Errorf("kind %s is not bound in namespace %s: it is bound in namespaces %s only", gk, ns, strings.Join(ids.BoundNamespaces(gk), ", "))
	}
}
