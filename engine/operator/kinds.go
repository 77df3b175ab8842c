package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

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

// reload loads the templates and brings the controllers in line: a changed
// kind gets its new template and every CR of it is reconciled, a new kind
// gets a controller, a removed kind's controller stops. A broken package
// keeps its last good revision serving, and the error is reported.
func (o *Operator) reload(ctx context.Context) error {
	o.reloading.Lock()
	defer o.reloading.Unlock()
	set, err := o.loadTemplates(ctx)
	// The load error was logged by loadFailed: the caller logs the rest.
	return without(o.reloadSet(ctx, set, err), err)
}

// reloadSet brings the controllers in line with set, the templates as
// loaded (LoadWith's answer, err included).
func (o *Operator) reloadSet(ctx context.Context, set *template.Set, err error) error {
	if set == nil {
		o.loadFailed(ctx, err, nil)
		o.mu.Lock()
		o.reports.loadFailed(ctx, servedKinds{o.kinds, o.waiting}, err) // templatestatus.go
		o.mu.Unlock()
		return err
	}
	if err != nil {
		o.loadFailed(ctx, err, set.Broken)
	}
	if o.opts.TemplatesLoaded != nil {
		o.opts.TemplatesLoaded(ctx, set)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	seen, unserved, failed := map[string]bool{}, map[string]bool{}, map[string]error{}
	var errs []error
	for _, k := range set.Kinds {
		seen[k.Name] = true
		if err := o.serve(ctx, k); err != nil {
			errs, failed[k.Name] = append(errs, err), err
			if retriable(err) {
				unserved[k.Name] = true
			}
		}
	}
	o.noteUnserved(ctx, unserved) // unserved.go
	for name := range o.waiting {
		if !seen[name] && set.Broken[name] == nil {
			o.stopWaiting(name)
		}
	}
	for name := range o.kinds {
		if !seen[name] && set.Broken[name] == nil {
			kc := o.kinds[name]
			o.stop(ctx, name)
			o.releaseOrdered(ctx, kc) // ordered.go: after its reconciles, which would set it again
		}
	}
	reports := maps.Clone(failed)
	for name, err := range set.Claims { // template/claims.go: it serves; its Template names the package refused
		if reports[name] == nil {
			reports[name] = err
		}
	}
	o.reports.reload(ctx, servedKinds{o.kinds, o.waiting}, set, reports) // templatestatus.go
	err = errors.Join(append(errs, err)...)
	o.accepted(set, failed, err) // accepted.go
	return err
}

// serve starts or updates the controller of k. The caller holds o.mu.
func (o *Operator) serve(ctx context.Context, k *template.Kind) error {
	if err := o.checkHolder(ctx, k); err != nil { // holder.go
		if errors.As(err, new(heldError)) {
			o.stopWaiting(k.Name)
			if _, ok := o.kinds[k.Name]; ok { // taken over by another operator
				o.stop(ctx, k.Name)
			}
		}
		return err
	}
	kc, ok := o.kinds[k.Name]
	if ok && kc.rec.Kind().Revision == k.Revision {
		o.schemaAccepted(k)
		return nil
	}
	commit, err := o.conv.prepare(ctx, k) // conversion.go
	if err != nil {
		return o.conversionRefused(ctx, k, err)
	}
	var early func() (undo func())
	if !o.conv.covers(k) {
		// A kind's first converter, and one that adds a version, converts
		// before its CRD is applied, once the schema guard passed it: the
		// CRD points at this webhook and serves the new version as soon as
		// it is established (a CR read at it then found no converter, or
		// one without that version). The one before comes back if the API
		// server refuses the CRD.
		early = func() func() {
			restore := o.conv.snapshot(k)
			commit()
			return restore
		}
	}
	if o.opts.InstallCRDs {
		if err := o.installCRDThen(ctx, k, early); err != nil { // crds.go
			return o.schemaRefused(ctx, k, k.Resource.CRDName(), err) // schemaguard.go
		}
	} else {
		if early != nil {
			early()
		}
		o.pointLive(ctx, k.Resource.CRDName()) // cabundle.go
	}
	if ok && kc.rec.Kind().Resource.GroupVersionKind() != k.Resource.GroupVersionKind() {
		// A new hub version: the controller starts anew at it. Its
		// converter is replaced, never removed, so that the API server's
		// conversions of the stored CRs never fail meanwhile.
		o.stopController(ctx, k.Name)
		ok = false
	}
	commit()
	o.schemaAccepted(k)
	o.metrics.revision(k)
	o.reports.warn(k)                 // templatewarn.go
	if !ok && o.awaitingCRD(ctx, k) { // crdwait.go: migrated and started once served
		return nil
	}
	o.migrations.start(ctx, k) // migrate.go
	if !ok {
		return o.start(ctx, k)
	}
	old := kc.rec.Kind()
	kc.rec.SetKind(k)
	o.log.Info("template changed", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision, "previous", old.Revision)
	go o.resyncAll(ctx, kc, k)
	return nil
}

func (o *Operator) start(ctx context.Context, k *template.Kind) error {
	b, err := o.ids.forKind(ctx, k) // identities.go
	if err != nil {
		return err
	}
	rec := reconcile.NewReconciler(k)
	rec.Parents, rec.Children, rec.Client, rec.Scheme = o.parents, b.cache, o.mgr.GetClient(), o.mgr.GetScheme()
	rec.Cluster, rec.Host = clusterOf(b), o.hostOf(k) // reconcilerhooks.go
	rec.Applier, rec.Recorder, rec.Observer = b.applier, o.recorder, o.metrics
	rec.Options.AllowedKinds, rec.Options.Scope = o.opts.AllowedKinds, o.scope
	rec.Options.Budget = o.opts.Budget
	rec.Evaluator = o.eval
	rec.Options.ReadableKinds, rec.Options.DataKinds = o.opts.ReadableKinds, o.opts.DataKinds
	rec.ChildLabels = b.childLabels()
	rec.Live = o.mgr.GetAPIReader() // reconcile/staleentries.go
	log := o.log.WithValues("kind", k.Resource.Kind)
	c, err := controller.NewUnmanaged("cueop-"+k.Name, controller.Options{
		Reconciler: rec, MaxConcurrentReconciles: o.opts.MaxConcurrent,
		SkipNameValidation: ptr.To(true), Logger: log,
		LogConstructor: reconcileLogger(log, "cueop-"+k.Name), // lazylog.go
		RateLimiter:    rateLimiter(),
	})
	if err != nil {
		o.ids.release(b, nil)
		return fmt.Errorf("kind %s: controller: %w", k.Name, err)
	}
	kc := &kindController{rec: rec, ctrl: c, resync: make(chan event.GenericEvent), crdName: k.Resource.CRDName(), b: b}
	if o.waitMapped(ctx, k.Resource.GroupVersionKind()) && !o.opts.InstallCRDs { // mapper.go
		o.pointLive(ctx, kc.crdName) // a CRD applied after cueop started
	}
	o.pace(ctx, kc, k)
	if err := o.watch(c, k, kc); err != nil {
		o.ids.release(b, nil)
		return fmt.Errorf("kind %s: %w", k.Name, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	kc.cancel, kc.stopped = cancel, make(chan struct{})
	o.kinds[k.Name] = kc
	o.controllers.Add(1)
	go func() {
		defer o.controllers.Done()
		defer close(kc.stopped)
		if err := c.Start(cctx); err != nil {
			o.log.Error(err, "controller stopped", "kind", k.Resource.Kind)
		}
	}()
	o.log.Info("serving kind", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision)
	return nil
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
func (o *Operator) watch(c controller.Controller, k *template.Kind, kc *kindController) error {
	parent := parentObject(k.Resource.GroupVersionKind())
	srcs := []source.Source{
		source.Kind[client.Object](o.parents, parent, &handler.EnqueueRequestForObject{}),
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
func (o *Operator) pace(ctx context.Context, kc *kindController, k *template.Kind) {
	ro := kc.rec.Rollout
	ro.MaxInFlight = o.opts.RolloutMaxInFlight
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
		o.log.Error(nil, msg, "kind", bad.Resource.Kind)
		o.crdEvent(ctx, kc.crdName, wellknown.CRDReasonRolloutHalted, msg)
	}
}

// stop stops the controller of a removed kind. Its CRs and their children
// are left untouched, and so is its CRD: its last revision keeps
// converting, so that its CRs stay readable at every version it serves.
// The caller holds o.mu.
func (o *Operator) stop(ctx context.Context, name string) {
	kc := o.kinds[name]
	gk := kc.rec.Kind().Resource.GroupVersionKind().GroupKind()
	o.stopController(ctx, name)
	// The reconciles in flight finish first (their writes are cancelled
	// with them or land now), so that nothing of this controller writes
	// after it is reported stopped.
	select {
	case <-kc.stopped:
	case <-time.After(stopWait):
		o.log.Info("kind removed: reconciles still in flight", "kind", gk.Kind, "waited", stopWait)
	case <-ctx.Done():
	}
	o.log.Info("kind removed: controller stopped, CRs and children left as they are, conversions kept", "package", name, "kind", gk.Kind)
}

// stopWait bounds how long a removed kind's reconciles are waited for.
const stopWait = 30 * time.Second

// stopController stops the controller of the kind name, leaving its
// converter served. The caller holds o.mu.
func (o *Operator) stopController(ctx context.Context, name string) {
	kc := o.kinds[name]
	kc.cancel()
	delete(o.kinds, name)
	kc.b.children.removeController(kc)
	kc.b.reads.removeController(kc)
	o.ids.release(kc.b, kc.stopped) // identities.go
	k := kc.rec.Kind()
	parent := parentObject(k.Resource.GroupVersionKind())
	if err := o.parents.RemoveInformer(ctx, parent); err != nil {
		o.log.Error(err, "remove informer", "kind", k.Resource.Kind)
	}
	o.metrics.removed(k)
}

// resyncAll enqueues every CR of k's kind, after a template change.
func (o *Operator) resyncAll(ctx context.Context, kc *kindController, k *template.Kind) {
	list := &unstructured.UnstructuredList{}
	gvk := k.Resource.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := o.parents.List(ctx, list); err != nil {
		o.log.Error(err, "list for resync", "kind", gvk.Kind)
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

func (o *Operator) kindNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for n := range o.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
