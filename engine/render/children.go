package render

import (
	"fmt"

	"cuelang.org/go/cue"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// exportChildren exports and checks every child. Every refused child is
// reported; one refusal refuses the whole render.
func exportChildren(v cue.Value, parent *unstructured.Unstructured, opts Options) ([]Child, error) {
	ids, vals, err := sortedIDs(v)
	if err != nil {
		return nil, err
	}
	if len(ids) > opts.MaxChildren {
		return nil, &Error{Reason: ReasonChildRefused, Messages: []string{
			fmt.Sprintf("%s: children: %d children exceed the render budget of %d", v.Pos(), len(ids), opts.MaxChildren)}}
	}
	children := make([]Child, 0, len(ids))
	refused := &Error{Reason: ReasonChildRefused}
	seen := map[string]string{}
	for _, id := range ids {
		obj, err := exportChild(id, vals[id])
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

func exportChild(id string, v cue.Value) (*unstructured.Unstructured, error) {
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, evalError(err)
	}
	var obj map[string]any
	if err := v.Decode(&obj); err != nil {
		return nil, &Error{Reason: ReasonTemplateError, Messages: []string{childError(id, v, "not an object: %v", err)}}
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
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = ManagedByValue
	labels[LabelID] = id
	if uid := parent.GetUID(); uid != "" {
		labels[LabelOwnerUID] = string(uid)
	}
	obj.SetLabels(labels)
	if parent.GetUID() == "" {
		return
	}
	t := true
	ref := metav1.OwnerReference{
		APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(), Name: parent.GetName(),
		UID: parent.GetUID(), Controller: &t, BlockOwnerDeletion: &t,
	}
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ref))
}

// defaultReady is true when every child exists and is Current by kstatus.
func defaultReady(children []Child, observed map[string]*unstructured.Unstructured) bool {
	for _, c := range children {
		o, ok := observed[c.ID]
		if !ok {
			return false
		}
		res, err := status.Compute(o)
		if err != nil || res.Status != status.CurrentStatus {
			return false
		}
	}
	return true
}
