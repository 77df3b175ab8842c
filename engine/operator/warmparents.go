package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/cueop/cueop/engine/template"
)

// warmParents starts the CR informer of each kind of set in the parents
// cache, without waiting for it, as soon as the templates have compiled:
// its initial list (seconds at a thousand CRs) then runs while the
// children's informers sync, rather than after them, when the kind's
// controller starts and asks for the same informer. A kind whose CRD is not
// served yet is left to its controller. It returns the kinds warmed, for
// unwarm.
func (o *Operator) warmParents(ctx context.Context, set *template.Set) []schema.GroupVersionKind {
	if set == nil {
		return nil
	}
	var warmed []schema.GroupVersionKind
	for _, k := range set.Kinds {
		gvk := k.Resource.GroupVersionKind()
		if _, err := o.parents.GetInformer(ctx, parentObject(gvk), cache.BlockUntilSynced(false)); err != nil {
			continue // not mapped (no CRD yet): the controller's source asks again
		}
		warmed = append(warmed, gvk)
	}
	return warmed
}

// unwarm removes the informers warmParents started for kinds that are not
// served after the first serve (refused, or waiting for their CRD): they
// would otherwise hold a cache and a watch of CRs nobody reconciles.
func (o *Operator) unwarm(ctx context.Context, warmed []schema.GroupVersionKind) {
	o.mu.Lock()
	served := map[schema.GroupVersionKind]bool{}
	for _, kc := range o.kinds {
		served[kc.rec.Kind().Resource.GroupVersionKind()] = true
	}
	o.mu.Unlock()
	for _, gvk := range warmed {
		if served[gvk] {
			continue
		}
		if err := o.parents.RemoveInformer(ctx, parentObject(gvk)); err != nil {
			o.log.Error(err, "remove informer", "kind", gvk.Kind)
		}
	}
}

// parentObject is the object the parents cache keys gvk's CRs by.
func parentObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	parent := &unstructured.Unstructured{}
	parent.SetGroupVersionKind(gvk)
	return parent
}
