package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
)

// childWatch is the state of the child kinds. Children of an allowed kind
// are watched (cached, indexed by owner, and listed by every reconcile) only
// once needed: at start, the kinds that already have children managed by
// cueop; later, a kind the first time a template renders a child of it. A
// kind stays watched for the life of the process, so that prune still sees
// the children of a kind a template stopped rendering.
type childWatch struct {
	served map[schema.GroupKind]*meta.RESTMapping // allowed kinds the API server serves
	meta   metadata.Interface

	mu       sync.Mutex
	indexed  map[schema.GroupKind]bool // informer created and indexed by owner
	watched  map[schema.GroupKind]bool // and synced, with every controller watching it
	kinds    []schema.GroupVersionKind // watched, in the order they were added
	watchers map[*kindController]bool  // running controllers, each watching every kind watched
}

// resolveChildKinds resolves the allow-listed kinds the API server serves.
func (o *Operator) resolveChildKinds(cfg *rest.Config) error {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	o.children = childWatch{served: map[schema.GroupKind]*meta.RESTMapping{}, meta: mc,
		indexed: map[schema.GroupKind]bool{}, watched: map[schema.GroupKind]bool{}, watchers: map[*kindController]bool{}}
	for gk := range o.opts.AllowedKinds {
		m, err := o.resolveChildKind(gk)
		if errors.Is(err, errNotServed) {
			o.log.Info("allowed kind not served by the API server (yet), not watched", "kind", gk.String(), "error", err.Error())
			continue
		}
		if err != nil {
			return err
		}
		o.children.served[gk] = m
	}
	return nil
}

var errNotServed = errors.New("not served by the API server")

// syncTimeout bounds the wait for a newly watched kind's informer to sync.
const syncTimeout = 30 * time.Second

// resolveChildKind resolves an allowed kind to the resource the API server
// serves it as.
func (o *Operator) resolveChildKind(gk schema.GroupKind) (*meta.RESTMapping, error) {
	if !o.opts.AllowedKinds[gk] {
		return nil, fmt.Errorf("kind %s is not in the allowed kinds", gk)
	}
	m, err := o.mgr.GetRESTMapper().RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w: %w", gk, errNotServed, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("allowed kinds: %s is cluster-scoped; children live in their parent's namespace", gk)
	}
	return m, nil
}

// discoverChildren watches every served allowed kind that has children
// managed by cueop (one list request per kind, at most one object long).
func (o *Operator) discoverChildren(ctx context.Context) error {
	gks := make([]schema.GroupKind, 0, len(o.children.served))
	for gk := range o.children.served {
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	selector := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue}).String()
	for _, gk := range gks {
		m := o.children.served[gk]
		list, err := o.children.meta.Resource(m.Resource).Namespace(o.opts.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: selector, Limit: 1})
		if err != nil {
			return fmt.Errorf("list the %s managed by cueop: %w", m.Resource.Resource, err)
		}
		if len(list.Items) > 0 {
			if err := o.watchKind(ctx, gk); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchedKinds are the child kinds watched now.
func (o *Operator) watchedKinds() []schema.GroupVersionKind {
	o.children.mu.Lock()
	defer o.children.mu.Unlock()
	return slices.Clone(o.children.kinds)
}

// watchKind watches the children of kind gk, unless it already does: their
// informer is indexed by owner and synced, and every running controller
// watches them, before it returns.
func (o *Operator) watchKind(ctx context.Context, gk schema.GroupKind) error {
	w := &o.children
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gk] {
		return nil
	}
	m, ok := w.served[gk]
	if !ok {
		// An allowed kind whose CRD was installed after the start.
		var err error
		if m, err = o.resolveChildKind(gk); err != nil {
			return err
		}
		w.served[gk] = m
	}
	obj := o.childObject(m.GroupVersionKind)
	if !w.indexed[gk] {
		if err := o.mgr.GetFieldIndexer().IndexField(ctx, obj, reconcile.IndexOwnerUID, reconcile.OwnerUIDIndex); err != nil {
			return fmt.Errorf("index %s children: %w", gk, err)
		}
		w.indexed[gk] = true
	}
	// A watch the API server refuses (RBAC) never syncs: fail the reconcile
	// (retried with backoff) rather than hold every other one.
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if _, err := o.mgr.GetCache().GetInformer(sctx, obj); err != nil {
		return fmt.Errorf("watch %s children (list and watch permitted?): %w", gk, err)
	}
	for kc := range w.watchers {
		if err := kc.ctrl.Watch(o.childSource(kc, m.GroupVersionKind)); err != nil {
			return fmt.Errorf("watch %s children: %w", gk, err)
		}
	}
	w.watched[gk] = true
	w.kinds = append(w.kinds, m.GroupVersionKind)
	o.log.Info("watching children", "kind", gk.String())
	return nil
}

// addChildWatches makes kc watch every child kind watched, now and later.
func (o *Operator) addChildWatches(kc *kindController) error {
	w := &o.children
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, gvk := range w.kinds {
		if err := kc.ctrl.Watch(o.childSource(kc, gvk)); err != nil {
			return err
		}
	}
	w.watchers[kc] = true
	return nil
}

func (o *Operator) removeChildWatches(kc *kindController) {
	o.children.mu.Lock()
	defer o.children.mu.Unlock()
	delete(o.children.watchers, kc)
}

// childSource enqueues kc's CR that controls a changed child of kind gvk.
func (o *Operator) childSource(kc *kindController, gvk schema.GroupVersionKind) source.Source {
	parent := &unstructured.Unstructured{}
	parent.SetGroupVersionKind(kc.rec.Kind().Resource.GroupVersionKind())
	owner := handler.EnqueueRequestForOwner(o.mgr.GetScheme(), o.mgr.GetRESTMapper(), parent, handler.OnlyControllerOwner())
	return source.Kind[client.Object](o.mgr.GetCache(), o.childObject(gvk), owner)
}
