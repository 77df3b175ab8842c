package operator

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/wellknown"
)

// releaseOrdered removes the ordered-deletion finalizer from every CR of a
// kind whose template directory was removed: nothing would ever remove it,
// and a deleted CR would wait forever. Such a CR, when deleted, goes at
// once and the garbage collector deletes its children, in no order. The
// CRs are listed from the API server, not the parents cache: a sharded
// replica clears them whatever ranges it holds at that moment (a range
// mid-handover has no holder to do it), and two replicas doing it at once
// only find the work done. They are read as the operator's own identity
// (o.ids.shared), as the CRs always are, even when the kind acts as its own.
func (kr *kindRunner) releaseOrdered(ctx context.Context, kc *kindController) {
	gvk := kc.rec.Kind().Resource.GroupVersionKind()
	m, err := kr.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		var crs []metav1.PartialObjectMetadata
		if crs, err = listMetadata(ctx, kr.ids.shared.meta, m.Resource, kr.opts.Namespace); err == nil {
			for i := range crs {
				kr.releaseOrderedOne(ctx, kc, m.Resource, gvk, &crs[i])
			}
			return
		}
	}
	kr.log.Error(err, "list to release the ordered-deletion finalizer", "kind", gvk.Kind)
}

// releaseOrderedOne removes the finalizer from cr, reading it again when
// the patch meets a list changed meanwhile (another replica, the garbage
// collector).
func (kr *kindRunner) releaseOrderedOne(ctx context.Context, kc *kindController, resource schema.GroupVersionResource, gvk schema.GroupVersionKind, cr *metav1.PartialObjectMetadata) {
	var err error
	for range 3 {
		if !slices.Contains(cr.GetFinalizers(), wellknown.FinalizerOrdered) {
			return
		}
		if err = kc.rec.ReleaseOrdered(ctx, childMetadata(cr, gvk)); err == nil {
			return
		}
		fresh, gerr := kr.ids.shared.meta.Resource(resource).Namespace(cr.GetNamespace()).Get(ctx, cr.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			return
		}
		if gerr != nil {
			err = gerr
			break
		}
		cr = fresh
	}
	kr.log.Error(fmt.Errorf("%s %s/%s: %w", gvk.Kind, cr.GetNamespace(), cr.GetName(), err), "release the ordered-deletion finalizer")
}
