package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
)

// observe lists, from the cache, every child the CR owns, keyed by child id.
// Owned objects that share an id with another are kept aside for pruning.
func (r *run) observe(ctx context.Context) error {
	r.observed = map[string]*unstructured.Unstructured{}
	uid := string(r.cr.GetUID())
	for _, gvk := range r.r.ChildKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := r.r.Children.List(ctx, list, client.InNamespace(r.cr.GetNamespace()),
			client.MatchingFields{IndexOwnerUID: uid})
		if err != nil {
			return fmt.Errorf("%s: list %s children: %w", r.subject(), gvk.Kind, err)
		}
		for i := range list.Items {
			r.add(&list.Items[i])
		}
	}
	return nil
}

func (r *run) add(obj *unstructured.Unstructured) {
	id := obj.GetLabels()[render.LabelID]
	if !isControlledBy(obj, r.cr) {
		return // labels can be copied; ownership cannot
	}
	if _, dup := r.observed[id]; id == "" || dup {
		r.extra = append(r.extra, obj)
		return
	}
	r.observed[id] = obj
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
	if uid := obj.GetLabels()[render.LabelOwnerUID]; uid != "" {
		return []string{uid}
	}
	return nil
}
