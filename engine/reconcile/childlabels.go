package reconcile

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// WithChildLabels is res with childLabels set on every child, as a
// reconcile applies them (Reconciler.ChildLabels); cueop diff renders its
// children so. res is not modified: a render result may be shared, so each
// child's object, metadata and labels are copied.
func WithChildLabels(res *render.Result, childLabels map[string]string) *render.Result {
	if len(childLabels) == 0 || res == nil || len(res.Children) == 0 {
		return res
	}
	out := *res
	out.Children = make([]render.Child, len(res.Children))
	for i, c := range res.Children {
		obj := maps.Clone(c.Object.Object)
		md, _ := obj["metadata"].(map[string]any)
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		labels, _ := md["labels"].(map[string]any)
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]any{}
		}
		for k, v := range childLabels {
			labels[k] = v
		}
		md["labels"] = labels
		obj["metadata"] = md
		c.Object = &unstructured.Unstructured{Object: obj}
		out.Children[i] = c
	}
	return &out
}
