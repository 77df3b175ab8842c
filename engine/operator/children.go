package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// childWatch is the state of the child kinds. Children of an allowed kind
// are watched (cached, indexed by owner, and listed by every reconcile) only
// once needed: at start, the kinds that already have children managed by
// cueop; later, a kind the first time a template renders a child of it. A
// kind is watched at the version templates render it (a child is the same
// object at any version, but the template reads and the no-op decision
// compares it at the version it writes), so a kind two templates render at
// two versions is watched at both. A watch stays for the life of the
// process, so that prune still sees the children of a kind a template
// stopped rendering.
type childWatch struct {
	controllerWatches // mu guards watches too
	watches           map[schema.GroupVersionKind]*kindWatch
}

// kindWatch is the watch of the children of one kind at one version.
type kindWatch struct {
	indexed bool          // informer created and indexed by owner
	watched bool          // and synced, with every controller watching it
	syncing *watchAttempt // the attempt under way, if any
}

// watchAttempt is one wait for an informer to sync; the callers that come
// meanwhile share its outcome.
type watchAttempt struct {
	done chan struct{}
	err  error
}

// wait waits for the attempt to end, and returns its error, or for ctx to
// be done.
func (a *watchAttempt) wait(ctx context.Context) error {
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// childKinds are the kinds of children cueop may own (the allowed kinds
// and the data kinds) and how the API server serves them.
type childKinds struct {
	allowed render.KindSet // Options.AllowedKinds
	data    render.KindSet // Options.DataKinds; nil: render.DefaultDataKinds
	log     logr.Logger
	scheme  *runtime.Scheme
	mapper  meta.RESTMapper
	config  *rest.Config // with http, the discovery asked afresh (ownedfresh.go)
	http    *http.Client
	// served are the allowed kinds the API server served at start, at
	// their preferred version; set by resolveAll.
	served map[schema.GroupKind]*meta.RESTMapping
}

// resolveAll resolves the allow-listed kinds the API server serves.
func (c *childKinds) resolveAll() error {
	c.served = map[schema.GroupKind]*meta.RESTMapping{}
	for gk := range c.allowed {
		m, err := c.resolve(gk, "")
		if errors.Is(err, errNotServed) {
			c.log.Info("allowed kind not served by the API server (yet), not watched", "kind", gk.String(), "error", err.Error())
			continue
		}
		if err != nil {
			return err
		}
		c.served[gk] = m
	}
	return nil
}

// object is the object the cache holds children of kind gvk as: typed
// when the scheme knows the kind (a third of the memory), else unstructured.
// reconcile.Reconciler.Scheme makes the reconciler list them alike.
func (c *childKinds) object(gvk schema.GroupVersionKind) client.Object {
	if obj, err := c.scheme.New(gvk); err == nil {
		if co, ok := obj.(client.Object); ok {
			return co
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

var errNotServed = errors.New("not served by the API server")

// syncTimeout bounds the wait for a newly watched kind's informer to sync.
const syncTimeout = 30 * time.Second

// discoverTimeout bounds it at start, for the kinds already in use: their
// initial lists (tens of thousands of Pods at the largest scale measured)
// may take longer than a reconcile should wait, and the operator serves
// nothing until they synced.
const discoverTimeout = 10 * time.Minute

// resolve resolves an allowed kind, at version or else at the preferred
// one, to the resource the API server serves it as.
func (c *childKinds) resolve(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	if !c.allowed[gk] {
		return nil, fmt.Errorf("kind %s is not in the allowed kinds", gk)
	}
	var versions []string
	if version != "" {
		versions = []string{version}
	}
	m, err := c.mapper.RESTMapping(gk, versions...)
	if err != nil {
		if version != "" {
			return nil, fmt.Errorf("kind %s version %s: %w: %w", gk, version, errNotServed, err)
		}
		return nil, fmt.Errorf("kind %s: %w: %w", gk, errNotServed, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("allowed kinds: %s is cluster-scoped; children live in their parent's namespace", gk)
	}
	return m, nil
}

// discoverChildren watches every served allowed kind that has children
// managed by cueop (one list request per kind, at most one object long),
// waiting timeout at most for each to sync.
func (b *bundle) discoverChildren(ctx context.Context, timeout time.Duration) error {
	ids := b.ids
	gks := make([]schema.GroupKind, 0, len(ids.kinds.served))
	for gk := range ids.kinds.served {
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	selector := labels.SelectorFromSet(labels.Set{wellknown.LabelManagedBy: wellknown.ManagedByValue})
	if b.sa != nil {
		selector = labels.SelectorFromSet(ids.identitySelector(*b.sa))
	}
	// Each kind's list and informer sync at once: at thousands of CRs each
	// in-use kind's initial list takes seconds, and a restarted process
	// serves nothing before the last one synced.
	g, gctx := errgroup.WithContext(ctx)
	for _, gk := range gks {
		m := ids.kinds.served[gk]
		g.Go(func() error {
			var list *metav1.PartialObjectMetadataList
			for _, ns := range b.listNamespaces() { // one each where the identity is bound
				l, err := b.meta.Resource(m.Resource).Namespace(ns).List(gctx,
					metav1.ListOptions{LabelSelector: selector.String(), Limit: 1})
				if b.notItsKind(err) { // ownedrefused.go
					continue
				}
				if err != nil {
					return fmt.Errorf("list the %s managed by cueop: %w", m.Resource.Resource, err)
				}
				if len(l.Items) > 0 {
					list = l
					break
				}
			}
			if list == nil {
				return nil
			}
			slow := time.AfterFunc(syncTimeout, func() {
				ids.log.Info("the informer of a kind in use has not synced yet (a large list, or a watch the API server refuses: RBAC, a broken conversion); nothing is served until it has",
					"kind", gk.String(), "waited", syncTimeout.String(), "gives up after", timeout.String())
			})
			defer slow.Stop()
			return b.watchKindWithin(gctx, ids.kinds.appliedVersion(m, list.Items[0].ManagedFields), discoverTimeout)
		})
	}
	return g.Wait()
}

// watchedKinds are the child kinds watched now.
func (b *bundle) watchedKinds() []schema.GroupVersionKind {
	b.children.mu.Lock()
	defer b.children.mu.Unlock()
	return slices.Clone(b.children.kinds)
}

// appliedVersion is the kind of m at the version cueop last applied a
// child with (the version its template renders), when the API server serves
// it, else at the preferred version.
func (c *childKinds) appliedVersion(m *meta.RESTMapping, fields []metav1.ManagedFieldsEntry) schema.GroupVersionKind {
	for _, e := range fields {
		if e.Manager != apply.DefaultFieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(e.APIVersion)
		if err != nil || gv.Group != m.GroupVersionKind.Group {
			break
		}
		if _, err := c.resolve(m.GroupVersionKind.GroupKind(), gv.Version); err == nil {
			return gv.WithKind(m.GroupVersionKind.Kind)
		}
	}
	return m.GroupVersionKind
}

// watchKind watches the children of kind gvk, unless it already does: their
// informer is indexed by owner and synced, and every running controller
// watches them, before it returns. The wait for the informer to sync holds
// no lock: a kind whose watch cannot sync (RBAC, a broken conversion)
// delays only the reconciles that render it, and those share one wait.
func (b *bundle) watchKind(ctx context.Context, gvk schema.GroupVersionKind) error {
	return b.watchKindWithin(ctx, gvk, syncTimeout)
}

// watchKindWithin is watchKind waiting at most timeout for the informer to
// sync (the first caller's timeout, for callers that share its wait).
func (b *bundle) watchKindWithin(ctx context.Context, gvk schema.GroupVersionKind, timeout time.Duration) error {
	w := &b.children
	w.mu.Lock()
	kw := w.watches[gvk]
	if kw == nil {
		kw = &kindWatch{}
		w.watches[gvk] = kw
	}
	if kw.watched {
		w.mu.Unlock()
		return nil
	}
	if a := kw.syncing; a != nil {
		w.mu.Unlock()
		return a.wait(ctx)
	}
	a := &watchAttempt{done: make(chan struct{})}
	kw.syncing = a
	w.mu.Unlock()

	m, err := b.startWatch(ctx, gvk, kw, timeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		err = b.addWatch(kw, m)
	}
	kw.syncing, a.err = nil, err
	close(a.done)
	return err
}

// startWatch creates the informer of gvk's children, indexed by owner, and
// waits (timeout at most) for it to sync. Only the caller that set
// kw.syncing runs it.
func (b *bundle) startWatch(ctx context.Context, gvk schema.GroupVersionKind, kw *kindWatch, timeout time.Duration) (*meta.RESTMapping, error) {
	m, err := b.ids.kinds.resolve(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	obj := b.ids.kinds.object(m.GroupVersionKind)
	if !kw.indexed {
		if err := b.cache.IndexField(ctx, obj, reconcile.IndexOwnerUID, reconcile.OwnerUIDIndex); err != nil {
			return nil, fmt.Errorf("index %s children: %w", gvk, err)
		}
		kw.indexed = true
	}
	// A watch the API server refuses (RBAC) never syncs: fail the reconcile
	// (retried with backoff) rather than wait for good.
	if err := b.listRefused(ctx, m.Resource); err != nil { // forbidden.go
		return nil, fmt.Errorf("watch %s children: %w", m.Resource.GroupResource(), err)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := b.cache.GetInformer(sctx, obj); err != nil {
		return nil, fmt.Errorf("watch %s children%s (list and watch permitted?): %w", m.Resource.GroupResource(), b.as(), b.refused.explain(m.Resource.GroupResource(), err))
	}
	b.refused.synced(m.Resource.GroupResource())
	return m, nil
}

// addWatch makes every running controller watch the synced children of m's
// kind, and later ones too. The caller holds the lock.
func (b *bundle) addWatch(kw *kindWatch, m *meta.RESTMapping) error {
	if err := b.children.addKind(m.GroupVersionKind); err != nil {
		return fmt.Errorf("watch %s children: %w", m.GroupVersionKind, err)
	}
	kw.watched = true
	b.ids.log.Info("watching children"+b.as(), "kind", m.GroupVersionKind.GroupKind().String(), "version", m.GroupVersionKind.Version)
	return nil
}

// childSource enqueues kc's CR that controls a changed child of kind gvk,
// marking it drifted first when the child was deleted or edited by hand.
func (b *bundle) childSource(kc *kindController, gvk schema.GroupVersionKind) source.Source {
	parent := parentObject(kc.rec.Kind().Resource.GroupVersionKind())
	owner := handler.EnqueueRequestForOwner(b.ids.scheme, b.ids.mapper, parent, handler.OnlyControllerOwner())
	return source.Kind[client.Object](b.cache, b.ids.kinds.object(gvk), driftHandler(kc, owner)) // drift.go
}
