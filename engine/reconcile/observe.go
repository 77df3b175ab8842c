package reconcile

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// observer is stage 1: it lists, from the cache, every child a CR
// controls, at every version watched (Cluster.ChildKinds: a render may add
// kinds, so they are asked at each observe).
type observer struct {
	children client.Reader   // Reconciler.Children
	scheme   *runtime.Scheme // Reconciler.Scheme
	cluster  Cluster         // nil: no child kinds
	manager  string          // cueop's field manager
}

// view is what observe saw of a CR's children: every child it controls and
// what the template sees of them, keyed by child id.
type view struct {
	owned    liveChildren
	observed map[string]*unstructured.Unstructured
	// sources are the listed objects of the children observe converted
	// only in part, by their partial view (partialview.go).
	sources map[*unstructured.Unstructured]runtime.Object
	wholes  map[*unstructured.Unstructured]*unstructured.Unstructured // converted by whole
}

// live is the live object c is (same group, kind and name, at any
// version), or nil when none; see matchLive.
func (v *view) live(c render.Child) *unstructured.Unstructured {
	return v.owned.matchLive(c.Object)
}

// observe lists every child cr controls and what the template sees of
// them. With keep (partialview.go), a typed child is converted but for its
// metadata and those top-level fields only; view.whole converts it all
// when a step needs more.
func (o observer) observe(ctx context.Context, cr *unstructured.Unstructured, keep map[string]bool) (*view, error) {
	var objs []*unstructured.Unstructured
	v := &view{}
	for _, gvk := range o.childKinds() {
		items, sources, err := o.list(ctx, gvk, cr.GetNamespace(), string(cr.GetUID()), keep)
		if err != nil {
			what := fmt.Sprintf("list %s in namespace %s", gvk.Kind, cr.GetNamespace())
			return nil, fmt.Errorf("%s: list %s children: %w", objectText(cr), gvk.Kind, deny(what, err)) // forbidden.go
		}
		objs = append(objs, items...)
		for i, src := range sources {
			if v.sources == nil {
				v.sources = map[*unstructured.Unstructured]runtime.Object{}
			}
			v.sources[items[i]] = src
		}
	}
	v.owned = sortChildren(cr, objs)
	v.observed = v.owned.templateView(o.manager)
	return v, nil
}

// childKinds are the kinds whose children a reconcile lists.
func (o observer) childKinds() []schema.GroupVersionKind {
	if o.cluster == nil {
		return nil
	}
	return o.cluster.ChildKinds()
}

// list lists from the cache the children of one kind that a parent owns.
// A kind the scheme knows is cached as typed objects, a third of the
// memory of unstructured ones (docs/benchmarks.md), and each child is
// converted for the template as it is listed (listTyped).
func (o observer) list(ctx context.Context, gvk schema.GroupVersionKind, ns, uid string, keep map[string]bool) (items []*unstructured.Unstructured, sources []runtime.Object, err error) {
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{IndexOwnerUID: uid}}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if o.scheme != nil && o.scheme.Recognizes(listGVK) {
		return o.listTyped(ctx, gvk, listGVK, opts, keep)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(listGVK)
	if err := o.children.List(ctx, list, opts...); err != nil {
		return nil, nil, err
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil, nil
}

// listTyped lists the children of a kind the scheme knows and converts
// each. When keep is not nil and the kind has a built-in schema, a child
// is converted but for the fields not in keep: partial, and sources holds,
// at the same index, the listed object it was converted from (nil when
// items are whole).
func (o observer) listTyped(ctx context.Context, gvk, listGVK schema.GroupVersionKind, opts []client.ListOption, keep map[string]bool) ([]*unstructured.Unstructured, []runtime.Object, error) {
	obj, err := o.scheme.New(listGVK)
	if err != nil {
		return nil, nil, err
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a list", listGVK)
	}
	// Without a deep copy: the cache's reader sets each item of a typed
	// list to a struct copy of its object, and toUnstructured only sets the
	// copy's own fields and reads the rest (a Pod's deep copy was the largest
	// allocation of a settled CR's reconcile after the conversion itself).
	if err := o.children.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, nil, err
	}
	listed, err := meta.ExtractList(list)
	if err != nil {
		return nil, nil, err
	}
	// A kind without a built-in schema has its no-op decision compare live
	// values (apply.NeedsApply): it is converted whole.
	if !kschema.KnownKind(gvk) {
		keep = nil
	}
	// partial and toUnstructured set the items' own fields: they must be
	// the list's copies, not the cache's objects, as a list whose items are
	// pointers would hand out.
	return convertItems(listed, itemsCopied(list), gvk, keep)
}

// convertItems converts listed for the template: by their partial view
// with keep (and then sources are the objects converted), else whole;
// copied says whether they are the list's own copies.
func convertItems(listed []runtime.Object, copied bool, gvk schema.GroupVersionKind, keep map[string]bool) (out []*unstructured.Unstructured, sources []runtime.Object, err error) {
	out = make([]*unstructured.Unstructured, 0, len(listed))
	if keep != nil {
		sources = make([]runtime.Object, 0, len(listed))
	}
	for _, item := range listed {
		if !copied {
			item = item.DeepCopyObject()
		}
		var u *unstructured.Unstructured
		if keep != nil {
			u, err = viewOf(item, gvk, keep) // partialview.go
			sources = append(sources, item)
		} else {
			u, err = toUnstructured(item, gvk)
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, u)
	}
	return out, sources, nil
}

// toUnstructured converts a typed child as the API server's JSON would
// decode, but for the managedFields entries' fieldsV1, kept as JSON text (see
// apply.fieldsJSON). obj may be a shallow copy of the cache's object: only
// its own managedFields slice header is set, nothing it points to is
// written, and the result shares no map or slice with it.
func toUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	mo, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%s: no object metadata", gvk)
	}
	managed := mo.GetManagedFields()
	mo.SetManagedFields(nil)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	if len(managed) > 0 {
		m["metadata"].(map[string]any)["managedFields"] = managedEntries(managed)
	}
	return u, nil
}

// managedEntries are managedFields entries as toUnstructured gives them.
func managedEntries(managed []metav1.ManagedFieldsEntry) []any {
	entries := make([]any, len(managed))
	for i, e := range managed {
		entry := map[string]any{"manager": e.Manager, "operation": string(e.Operation), "apiVersion": e.APIVersion, "fieldsType": e.FieldsType}
		if e.Subresource != "" {
			entry["subresource"] = e.Subresource
		}
		if e.FieldsV1 != nil {
			entry["fieldsV1"] = string(e.FieldsV1.Raw)
		}
		entries[i] = entry
	}
	return entries
}

// itemsCopied is whether the items of a typed list are structs (each a copy
// of the object the cache's reader set it from), not pointers.
func itemsCopied(list client.ObjectList) bool {
	items, err := meta.GetItemsPtr(list)
	if err != nil {
		return false
	}
	t := reflect.TypeOf(items).Elem().Elem()
	return t.Kind() == reflect.Struct && t != reflect.TypeOf(runtime.RawExtension{})
}

func isControlledBy(obj, owner *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// OwnerUIDIndex is the index function of IndexOwnerUID.
func OwnerUIDIndex(obj client.Object) []string {
	if uid := obj.GetLabels()[wellknown.LabelOwnerUID]; uid != "" {
		return []string{uid}
	}
	return nil
}
