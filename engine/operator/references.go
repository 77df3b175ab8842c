package operator

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cueop/cueop/engine/reconcile"
)

// readWatch is the state of the kinds templates reference. A readable kind
// is watched (in a cache of its own: the objects are not cueop's, so the
// children cache's label selector would hide them) only once a template
// references it, and from then on every controller maps an event of such
// an object to the CRs that reference it (reconcile.RefIndex): no resync.
//
// The cache holds the objects' metadata only (name, labels, uid,
// resourceVersion: what references are resolved and a render's digest is
// computed from), so that its memory does not grow with the data of every
// object of the kind in the cluster; a render reads the few objects it
// needs whole (loadReferenced), through a small LRU of objects.
type readWatch struct {
	cache   cache.Cache
	objects *objectLRU // refobjects.go

	controllerWatches // mu guards syncing too
	syncing           map[schema.GroupVersionKind]*watchAttempt
}

// newReadCache creates the cache of referenced objects' metadata, in
// nss (nil: every namespace), their managedFields dropped,
// on cfg and hc (the identity that reads them), with onError its watch
// error handler (nil: client-go's).
func (ids *identities) newReadCache(cfg *rest.Config, hc *http.Client, nss map[string]cache.Config, onError toolscache.WatchErrorHandlerWithContext) (cache.Cache, error) {
	c, err := cache.New(cfg, cache.Options{HTTPClient: hc, Scheme: ids.scheme, Mapper: ids.mapper,
		DefaultNamespaces: nss, DefaultTransform: dropManagedFields, DefaultWatchErrorHandler: onError})
	if err != nil {
		return nil, fmt.Errorf("references cache: %w", err)
	}
	return c, nil
}

// newReadWatch is the state of the referenced kinds read through c, each
// identity's own (its objects too: one identity's reads never serve
// another's).
func newReadWatch(c cache.Cache, src func(*kindController, schema.GroupVersionKind) source.Source) readWatch {
	return readWatch{cache: c, objects: newObjectLRU(referencedObjectsBytes), syncing: map[schema.GroupVersionKind]*watchAttempt{}, controllerWatches: newControllerWatches(src)}
}

// checkReadableKinds refuses a cluster-scoped readable kind: references
// are read in the CR's namespace. A kind the API server does not serve
// (yet) is checked when a template first references it.
func (ids *identities) checkReadableKinds() error {
	for gk := range ids.readable {
		m, err := ids.mapper.RESTMapping(gk)
		if err != nil {
			continue
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			return fmt.Errorf("readable kinds: %s is cluster-scoped; references are read in the CR's namespace", gk)
		}
	}
	return nil
}

func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// readReferenced is the reconcilers' reconcile.ReadFunc: the objects of a
// readable kind in namespace, by their metadata, from the watched cache
// (loadReferenced reads one whole).
func (b *bundle) readReferenced(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error) {
	if err := b.watchReadable(ctx, gvk); err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := b.reads.cache.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = metadataObject(gvk, &list.Items[i])
	}
	return out, nil
}

// metadataObject is the object m stands for, with what references are
// resolved by and a render's digest counts: its kind, name, namespace,
// uid, resourceVersion and labels (a fresh map: the cache's own is
// shared).
func metadataObject(gvk schema.GroupVersionKind, m *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetUID(m.UID)
	u.SetResourceVersion(m.ResourceVersion)
	if len(m.Labels) > 0 {
		u.SetLabels(m.Labels)
	}
	return u
}

// watchReadable watches the objects of kind gvk, unless it already does:
// the informer is synced and every running controller maps its events to
// the CRs that reference them before it returns.
func (b *bundle) watchReadable(ctx context.Context, gvk schema.GroupVersionKind) error {
	w := &b.reads
	w.mu.Lock()
	if slices.Contains(w.kinds, gvk) {
		w.mu.Unlock()
		return nil
	}
	if a := w.syncing[gvk]; a != nil {
		w.mu.Unlock()
		return a.wait(ctx)
	}
	a := &watchAttempt{done: make(chan struct{})}
	w.syncing[gvk] = a
	w.mu.Unlock()

	err := b.startReadWatch(ctx, gvk)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		err = w.addKind(gvk)
	}
	if err == nil {
		b.ids.log.Info("watching referenced objects"+b.as(), "kind", gvk.GroupKind().String(), "version", gvk.Version)
	}
	delete(w.syncing, gvk)
	a.err = err
	close(a.done)
	return err
}

// startReadWatch checks gvk against the readable kinds and starts its
// informer, waiting syncTimeout at most for it to sync.
func (b *bundle) startReadWatch(ctx context.Context, gvk schema.GroupVersionKind) error {
	ids := b.ids
	if !ids.readable[gvk.GroupKind()] {
		return fmt.Errorf("kind %s is not in the readable kinds (%s)", gvk.GroupKind(), ids.readable)
	}
	m, err := ids.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("referenced kind %s: %w: %w", gvk, errNotServed, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return fmt.Errorf("referenced kind %s is cluster-scoped; references are read in the CR's namespace", gvk.GroupKind())
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := b.listRefused(ctx, m.Resource); err != nil { // forbidden.go
		return fmt.Errorf("watch referenced %s: %w", m.Resource.GroupResource(), err)
	}
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if _, err := b.reads.cache.GetInformer(sctx, obj); err != nil {
		return fmt.Errorf("watch referenced %s%s (get, list and watch permitted?): %w", m.Resource.GroupResource(), b.as(), b.refused.explain(m.Resource.GroupResource(), err))
	}
	b.refused.synced(m.Resource.GroupResource())
	return nil
}

// readSource enqueues the CRs of kc's kind that reference a changed object
// of kind gvk (on an update, as it was and as it is: a selector that
// matched it before matters too).
func (b *bundle) readSource(kc *kindController, gvk schema.GroupVersionKind) source.Source {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	refs := kc.rec.Refs
	toCRs := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrlreconcile.Request {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return nil
		}
		var reqs []ctrlreconcile.Request
		for _, key := range refs.Match(metadataObject(gvk, m)) {
			reqs = append(reqs, ctrlreconcile.Request{NamespacedName: key})
		}
		return reqs
	})
	return source.Kind[client.Object](b.reads.cache, obj, toCRs)
}

// serveReferences wires kc's reconciler to the references cache of its
// identity.
func (b *bundle) serveReferences(kc *kindController) error {
	kc.rec.Refs = reconcile.NewRefIndex()
	return b.reads.addController(kc)
}
