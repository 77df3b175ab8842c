package operator

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
)

// driftHandler wraps the handler that enqueues the CR controlling a
// changed child: a child deleted, or changed on what cueop applied (its
// field set or its applied hash) by someone else, first marks its CR as
// drifted (reconcile.Rollout.Drifted), so that a CR waiting its rollout
// turn on a revision this process cannot render is repaired at once.
func driftHandler(kc *kindController, owner handler.EventHandler) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]
	mark := func(obj client.Object) {
		if key, ok := controlledBy(obj, kc.rec.Kind().Resource.GroupVersionKind().GroupKind()); ok {
			kc.rec.Rollout.Drifted(key)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { owner.Create(ctx, e, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if appliedChanged(e.ObjectOld, e.ObjectNew) {
				mark(e.ObjectNew)
			}
			owner.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			mark(e.Object)
			owner.Delete(ctx, e, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { owner.Generic(ctx, e, q) },
	}
}

// controlledBy is the CR of kind gk that controls obj, if any.
func controlledBy(obj client.Object, gk schema.GroupKind) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != gk.Kind {
		return types.NamespacedName{}, false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gk.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, true
}

// appliedChanged reports whether what cueop applied to a child changed
// between two of its states: its applied-hash annotation or its field set
// (cueop's managedFields entry, the only one the cache keeps).
func appliedChanged(old, cur client.Object) bool {
	if old.GetAnnotations()[wellknown.AnnotationAppliedHash] != cur.GetAnnotations()[wellknown.AnnotationAppliedHash] {
		return true
	}
	return !reflect.DeepEqual(cueopFields(old), cueopFields(cur))
}

// cueopFields is cueop's managedFields entry of obj for the object itself
// (not a subresource), as the cache holds it: raw JSON of a typed object,
// JSON text of an unstructured one (compactChild).
func cueopFields(obj client.Object) any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
		for _, e := range entries {
			if m, _ := e.(map[string]any); m["manager"] == apply.DefaultFieldManager && m["subresource"] == nil {
				return m["fieldsV1"]
			}
		}
		return nil
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager == apply.DefaultFieldManager && e.Subresource == "" && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return nil
}
