package diff

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
)

// references resolves the references of j's CR as a reconcile does
// (reconcile.ReadReferences): evaluated for the CR, checked against the
// readable kinds (a render.Error, ReasonReferenceRefused, when one is not),
// and read in the CR's namespace only. missing names the references by
// name that found no object ("" when none).
func (d *differ) references(ctx context.Context, j job) (got map[string]render.Referenced, missing string, err error) {
	refs, err := render.References(j.kind, j.cr, d.o.Render)
	if err != nil || len(refs) == 0 {
		return nil, "", err
	}
	return reconcile.ReadReferences(ctx, refs, j.cr.GetNamespace(), d.reads.read)
}

// readLists lists the objects of the referenced kinds, each kind (at the
// version a template references) once per Run: in Options.Namespace, or
// in every namespace when it is "" (then split by namespace), rather than
// once per CR. It is safe for concurrent use.
type readLists struct {
	c         client.Client
	namespace string // Options.Namespace

	mu    sync.Mutex
	lists map[readKey]*readList
}

type readKey struct {
	gvk       schema.GroupVersionKind
	namespace string // "": every namespace
}

// readList is one list, made by the first CR that needs it.
type readList struct {
	once sync.Once
	byNS map[string][]*unstructured.Unstructured
	err  error
}

// read is the reconcile.ReadFunc of diff: the objects of kind gvk in
// namespace, from the list of their namespace, or of all.
func (l *readLists) read(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error) {
	key := readKey{gvk: gvk, namespace: l.namespace}
	if l.namespace != "" && l.namespace != namespace { // a CR of a file, in another namespace
		key.namespace = namespace
	}
	l.mu.Lock()
	if l.lists == nil {
		l.lists = map[readKey]*readList{}
	}
	rl := l.lists[key]
	if rl == nil {
		rl = &readList{}
		l.lists[key] = rl
	}
	l.mu.Unlock()
	rl.once.Do(func() { rl.byNS, rl.err = l.list(ctx, key) })
	return rl.byNS[namespace], rl.err
}

// list lists the objects of key's kind, refusing a kind the cluster does
// not serve or that is cluster-scoped, as the operator does.
func (l *readLists) list(ctx context.Context, key readKey) (map[string][]*unstructured.Unstructured, error) {
	gvk := key.gvk
	m, err := l.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("referenced kind %s at %s: the cluster does not serve it: %w", gvk.GroupKind(), gvk.GroupVersion(), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("referenced kind %s is cluster-scoped; references are read in the CR's namespace", gvk.GroupKind())
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.c.List(ctx, list, client.InNamespace(key.namespace)); err != nil {
		return nil, fmt.Errorf("list referenced %s: %w", m.Resource.GroupResource(), err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for i := range list.Items {
		o := &list.Items[i]
		o.SetManagedFields(nil) // as the operator's cache keeps them
		out[o.GetNamespace()] = append(out[o.GetNamespace()], o)
	}
	return out, nil
}
