package operator

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
)

// warmParents starts the CR informer of each kind of set in the parents
// cache, without waiting for it, as soon as the templates have compiled:
// its initial list (seconds at a thousand CRs) then runs while the
// children's informers sync, rather than after them, when the kind's
// controller starts and asks for the same informer. Only a kind whose CRs
// are all stored at the version its controller reads is warmed: listing
// any other would go through the conversion webhook before this process
// converts (lifecycle.go serve), and fail into the list's backoff. The other
// kinds, and those with no CRD yet, are left to their controllers. It
// returns the kinds warmed, for unwarm.
func (kr *kindRunner) warmParents(ctx context.Context, set *template.Set) []schema.GroupVersionKind {
	if set == nil {
		return nil
	}
	var warmed []schema.GroupVersionKind
	for _, k := range set.Kinds {
		gvk := k.Resource.GroupVersionKind()
		if !kr.storedAt(ctx, k.Resource.CRDName(), gvk.Version) {
			continue
		}
		if _, err := kr.parents.GetInformer(ctx, parentObject(gvk), cache.BlockUntilSynced(false)); err != nil {
			continue // not mapped yet: the controller's source asks again
		}
		warmed = append(warmed, gvk)
	}
	return warmed
}

// storedAt says whether the live CRD crd stores its CRs at version only
// (its storage version, and no other in status.storedVersions).
func (kr *kindRunner) storedAt(ctx context.Context, crd, version string) bool {
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := kr.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: crd}, live); err != nil {
		return false
	}
	to, from := migrate.Pending(live)
	return to == version && len(from) == 0
}

// parentObject is the object the parents cache keys gvk's CRs by.
func parentObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	parent := &unstructured.Unstructured{}
	parent.SetGroupVersionKind(gvk)
	return parent
}
