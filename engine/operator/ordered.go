package operator

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/reconcile"
)

// releaseOrdered removes the ordered-deletion finalizer from every CR of a
// kind whose template directory was removed: nothing would ever remove it,
// and a deleted CR would wait forever. Such a CR, when deleted, goes at
// once and the garbage collector deletes its children, in no order.
func (o *Operator) releaseOrdered(ctx context.Context, kc *kindController) {
	list := &unstructured.UnstructuredList{}
	gvk := kc.rec.Kind().Resource.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := o.parents.List(ctx, list); err != nil {
		o.log.Error(err, "list to release the ordered-deletion finalizer", "kind", gvk.Kind)
		return
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if !slices.Contains(cr.GetFinalizers(), reconcile.FinalizerOrdered) {
			continue
		}
		if err := kc.rec.ReleaseOrdered(ctx, cr); err != nil {
			o.log.Error(err, "release the ordered-deletion finalizer", "kind", gvk.Kind, "name", cr.GetName(), "namespace", cr.GetNamespace())
		}
	}
}
