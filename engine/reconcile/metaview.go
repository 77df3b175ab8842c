package reconcile

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metaView converts om, but for its managedFields, as
// runtime.DefaultUnstructuredConverter converts an ObjectMeta (the JSON
// names, omitempty and omitzero, a Time as RFC 3339 in UTC), without
// reflection: the metadata of every child listed is converted at every
// reconcile, and the reflective converter spent most of a partial view's
// time and allocations on it. The result shares no map or slice with om.
// TestMetaViewAsConverter checks it against the converter on random
// metadata, and that ObjectMeta and OwnerReference have no field it does
// not know.
func metaView(om *metav1.ObjectMeta) map[string]any {
	m := make(map[string]any, 8)
	putString(m, "name", om.Name)
	putString(m, "generateName", om.GenerateName)
	putString(m, "namespace", om.Namespace)
	putString(m, "selfLink", om.SelfLink)
	putString(m, "uid", string(om.UID))
	putString(m, "resourceVersion", om.ResourceVersion)
	if om.Generation != 0 {
		m["generation"] = om.Generation
	}
	if !om.CreationTimestamp.IsZero() {
		m["creationTimestamp"] = timeView(om.CreationTimestamp)
	}
	if om.DeletionTimestamp != nil {
		m["deletionTimestamp"] = timeView(*om.DeletionTimestamp)
	}
	if om.DeletionGracePeriodSeconds != nil {
		m["deletionGracePeriodSeconds"] = *om.DeletionGracePeriodSeconds
	}
	putStrings(m, "labels", om.Labels)
	putStrings(m, "annotations", om.Annotations)
	if len(om.OwnerReferences) > 0 {
		refs := make([]any, len(om.OwnerReferences))
		for i, r := range om.OwnerReferences {
			ref := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID)}
			if r.Controller != nil {
				ref["controller"] = *r.Controller
			}
			if r.BlockOwnerDeletion != nil {
				ref["blockOwnerDeletion"] = *r.BlockOwnerDeletion
			}
			refs[i] = ref
		}
		m["ownerReferences"] = refs
	}
	if len(om.Finalizers) > 0 {
		fs := make([]any, len(om.Finalizers))
		for i, f := range om.Finalizers {
			fs[i] = f
		}
		m["finalizers"] = fs
	}
	return m
}

func putString(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func putStrings(m map[string]any, key string, v map[string]string) {
	if len(v) == 0 {
		return
	}
	out := make(map[string]any, len(v))
	for k, s := range v {
		out[k] = s
	}
	m[key] = out
}

// timeView is metav1.Time's ToUnstructured.
func timeView(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}
