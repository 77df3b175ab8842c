package diff

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// atRenderedVersions renders again when the CR renders a child at another
// version than the one its kind was listed at (the cluster's preferred
// one): the controller watches a kind at the version rendered, and its
// template reads the child at that version. The children of the CR are
// listed at each such version and the render is done over them too.
func (d *differ) atRenderedVersions(ctx context.Context, j job, referenced map[string]render.Referenced, p *reconcile.Preview) (*reconcile.Preview, error) {
	var more []*unstructured.Unstructured
	var done []schema.GroupVersionKind
	for _, c := range p.Result.Children {
		gvk := c.Object.GroupVersionKind()
		m, err := d.o.Client.RESTMapper().RESTMapping(gvk.GroupKind())
		if err != nil || m.GroupVersionKind == gvk || slices.Contains(done, gvk) {
			continue
		}
		done = append(done, gvk)
		objs, err := d.listAt(ctx, gvk, j.cr)
		if err != nil {
			return nil, err
		}
		more = append(more, objs...)
	}
	if len(more) == 0 {
		return p, nil
	}
	return reconcile.PreviewRender(j.kind, j.cr, append(slices.Clip(j.objs), more...), referenced, d.manager, d.childLabels(j.kind), d.o.Render)
}

// listAt lists the children of cr of one kind at one version.
func (d *differ) listAt(ctx context.Context, gvk schema.GroupVersionKind, cr *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := d.o.Client.List(ctx, list, client.InNamespace(cr.GetNamespace()), client.MatchingLabels{wellknown.LabelOwnerUID: string(cr.GetUID())})
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: list %s children at %s: %w", cr.GetKind(), cr.GetNamespace(), cr.GetName(), gvk.Kind, gvk.Version, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
