package render

import (
	"fmt"

	"cuelang.org/go/cue"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/wellknown"
)

// exportChildren exports and checks every child. Every refused child is
// reported; one refusal refuses the whole render.
func exportChildren(v cue.Value, parent *unstructured.Unstructured, opts Options) ([]Child, error) {
	ids, vals, err := sortedIDs(v)
	if err != nil {
		return nil, err
	}
	if len(ids) > opts.MaxChildren {
		return nil, &Error{Reason: wellknown.ReasonChildRefused, Messages: []string{
			fmt.Sprintf("%s: children: %d children exceed the render budget of %d", v.Pos(), len(ids), opts.MaxChildren)}}
	}
	children := make([]Child, 0, len(ids))
	refused := &Error{Reason: wellknown.ReasonChildRefused}
	seen := map[string]string{}
	// One walk validates every child of a good render; a bad one is looked
	// for child by child, so that the error is still the first bad child's.
	valid := v.Validate(cue.Concrete(true)) == nil
	for _, id := range ids {
		opts.tracker.Phase("children." + id)
		obj, err := exportChild(id, vals[id], valid)
		if err != nil {
			return nil, err
		}
		if msg := checkChild(id, vals[id], obj, parent, opts, seen); msg != "" {
			refused.Messages = append(refused.Messages, msg)
			continue
		}
		setEngineFields(id, obj, parent)
		children = append(children, Child{ID: id, Object: obj})
	}
	if len(refused.Messages) > 0 {
		return nil, refused
	}
	return children, nil
}

// exportChild validates and exports one child. valid tells that the whole
// children struct validates, and so every child in it.
func exportChild(id string, v cue.Value, valid bool) (*unstructured.Unstructured, error) {
	if !valid {
		if err := v.Validate(cue.Concrete(true)); err != nil {
			return nil, evalError(err)
		}
	}
	if obj, ok := exportObject(v); ok {
		return &unstructured.Unstructured{Object: obj}, nil
	}
	var obj map[string]any
	if err := v.Decode(&obj); err != nil {
		return nil, &Error{Reason: wellknown.ReasonTemplateError, Messages: []string{childError(id, v, "not an object: %v", err)}}
	}
	return &unstructured.Unstructured{Object: normalize(obj).(map[string]any)}, nil
}

// checkChild returns why a child is refused, or "".
func checkChild(id string, v cue.Value, obj *unstructured.Unstructured, parent *unstructured.Unstructured, opts Options, seen map[string]string) string {
	if errs := validation.IsValidLabelValue(id); len(errs) > 0 || id == "" {
		return childError(id, v, "child id must be a valid label value: %v", errs)
	}
	gvk := obj.GroupVersionKind()
	if gvk.Version == "" || gvk.Kind == "" {
		return childError(id, v, "apiVersion and kind are required")
	}
	if obj.GetName() == "" {
		return childError(id, v, "metadata.name is required")
	}
	if !opts.AllowedKinds[gvk.GroupKind()] {
		return childError(id, v, "kind %s is not in the allowed kinds (%s)", gvk.GroupKind(), opts.AllowedKinds)
	}
	if namespaced, known := opts.Scope(gvk.GroupKind()); !known || !namespaced {
		return childError(id, v, "kind %s is cluster-scoped or unknown: children live in their parent's namespace", gvk.GroupKind())
	}
	if ns := obj.GetNamespace(); ns != "" && ns != parent.GetNamespace() {
		return childError(id, v, "namespace %q refused: children live in their parent's namespace %q", ns, parent.GetNamespace())
	}
	if msg := checkEngineSet(id, v, obj); msg != "" {
		return msg
	}
	key := gvk.GroupKind().String() + "/" + obj.GetName()
	if other, dup := seen[key]; dup {
		return childError(id, v, "%s %s is also rendered by child %s", gvk.Kind, obj.GetName(), other)
	}
	seen[key] = id
	return ""
}

// setEngineFields gives a child its parent's namespace, the management
// labels and, when the parent has a uid, the controller owner reference.
func setEngineFields(id string, obj, parent *unstructured.Unstructured) {
	obj.SetNamespace(parent.GetNamespace())
	if md, ok := plainMetadata(obj); ok {
		addEngineFields(id, md, parent)
		return
	}
	setEngineFieldsSlow(id, obj, parent)
}

// setEngineFieldsSlow sets the labels and the owner reference through the
// unstructured getters and setters, which normalize what the template wrote
// (labels that are not strings, owner references).
func setEngineFieldsSlow(id string, obj, parent *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range engineLabels(id, parent) {
		labels[k] = v
	}
	obj.SetLabels(labels)
	if parent.GetUID() == "" {
		return
	}
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ownerReference(parent)))
}

// plainMetadata returns the child's metadata when its labels are absent or
// all strings and it has no owner references: the common case, where
// addEngineFields gives what setEngineFieldsSlow gives without its copies
// and the reflection of SetOwnerReferences.
func plainMetadata(obj *unstructured.Unstructured) (map[string]any, bool) {
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	if _, has := md["ownerReferences"]; has {
		return nil, false
	}
	labels, has := md["labels"]
	if !has {
		return md, true
	}
	m, ok := labels.(map[string]any)
	if !ok {
		return nil, false
	}
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return nil, false
		}
	}
	return md, true
}

// addEngineFields sets the management labels and the owner reference on
// metadata that plainMetadata accepted.
func addEngineFields(id string, md map[string]any, parent *unstructured.Unstructured) {
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	for k, v := range engineLabels(id, parent) {
		labels[k] = v
	}
	if parent.GetUID() == "" {
		return
	}
	ref := ownerReference(parent)
	md["ownerReferences"] = []any{map[string]any{
		"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID),
		"controller": true, "blockOwnerDeletion": true,
	}}
}

// engineLabels are the labels the engine sets on child id.
func engineLabels(id string, parent *unstructured.Unstructured) map[string]string {
	labels := map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByValue, wellknown.LabelID: id}
	if uid := parent.GetUID(); uid != "" {
		labels[wellknown.LabelOwnerUID] = string(uid)
	}
	return labels
}

// ownerReference is the controller reference to parent.
func ownerReference(parent *unstructured.Unstructured) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(), Name: parent.GetName(),
		UID: parent.GetUID(), Controller: &t, BlockOwnerDeletion: &t,
	}
}

// defaultReady is true when every child exists and is Current by kstatus.
func defaultReady(children []Child, observed map[string]*unstructured.Unstructured) bool {
	for _, c := range children {
		o, ok := observed[c.ID]
		if !ok {
			return false
		}
		if c.ReadyWhen != nil {
			if !*c.ReadyWhen {
				return false
			}
			continue
		}
		res, err := status.Compute(o)
		if err != nil || res.Status != status.CurrentStatus {
			return false
		}
	}
	return true
}
