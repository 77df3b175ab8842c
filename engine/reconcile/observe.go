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
	"github.com/cueop/cueop/engine/wellknown"
)

// observe lists, from the cache, every child the CR controls, at every
// version watched, and what the template sees of them, keyed by child id.
// With keep (partialview.go), a typed child is converted but for its
// metadata and those top-level fields only; whole converts it all when a
// step needs more.
func (r *run) observe(ctx context.Context, keep map[string]bool) error {
	var objs []*unstructured.Unstructured
	uid := string(r.cr.GetUID())
	r.sources, r.wholes = nil, nil
	for _, gvk := range r.r.childKinds() {
		items, sources, err := r.r.listChildren(ctx, gvk, r.cr.GetNamespace(), uid, keep)
		if err != nil {
			what := fmt.Sprintf("list %s in namespace %s", gvk.Kind, r.cr.GetNamespace())
			return fmt.Errorf("%s: list %s children: %w", r.subject(), gvk.Kind, deny(what, err)) // forbidden.go
		}
		objs = append(objs, items...)
		for i, src := range sources {
			if r.sources == nil {
				r.sources = map[*unstructured.Unstructured]runtime.Object{}
			}
			r.sources[items[i]] = src
		}
	}
	r.owned = sortChildren(r.cr, objs)
	r.observed = r.owned.templateView(r.r.fieldManager())
	return nil
}

// listChildren lists from the cache the children of one kind that a parent
// owns. A kind the scheme knows is cached as typed objects, a third of the
// memory of unstructured ones (docs/benchmarks.md), and each
// child is converted for the template as it is listed. When keep is not
// nil and the kind has a built-in schema, a child is converted but for the
// fields not in keep: partial, and sources holds, at the same index, the
// listed object it was converted from (nil when items are whole).
func (r *Reconciler) listChildren(ctx context.Context, gvk schema.GroupVersionKind, ns, uid string, keep map[string]bool) (items []*unstructured.Unstructured, sources []runtime.Object, err error) {
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{IndexOwnerUID: uid}}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if r.Scheme == nil || !r.Scheme.Recognizes(listGVK) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		if err := r.Children.List(ctx, list, opts...); err != nil {
			return nil, nil, err
		}
		out := make([]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil, nil
	}
	obj, err := r.Scheme.New(listGVK)
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
	if err := r.Children.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
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
	copied := itemsCopied(list)
	out := make([]*unstructured.Unstructured, 0, len(listed))
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
