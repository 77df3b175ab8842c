package diff

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// CRFieldManager is the field manager of the dry-run apply of a CR from a
// file: kubectl's, as `kubectl apply --server-side -f` would apply it.
const CRFieldManager = "kubectl"

// jobs lists the CRs to diff and their children, and adds a summary per
// kind to r; total counts the CRs per kind.
func (d *differ) jobs(ctx context.Context, r *Report) ([]job, map[schema.GroupKind]int) {
	if len(d.o.Files) > 0 {
		return d.fileJobs(ctx, r)
	}
	total := map[schema.GroupKind]int{}
	var jobs []job
	matched := false
	for _, k := range d.o.Set.Kinds {
		if !selected(k, d.o.Kinds) {
			continue
		}
		matched = true
		sum := summaryOf(k)
		crs, err := d.listCRs(ctx, k)
		switch {
		case meta.IsNoMatchError(err):
			sum.NotServed = true
		case err != nil:
			r.Errors = append(r.Errors, fmt.Sprintf("list %s: %v", k.Resource.Kind, err))
		}
		r.Kinds = append(r.Kinds, sum)
		total[schema.GroupKind{Group: sum.Group, Kind: sum.Kind}] = len(crs)
		if len(crs) > 0 {
			d.checkSchema(ctx, k, r) // schema.go
		}
		for _, cr := range crs {
			jobs = append(jobs, job{kind: k, cr: cr})
		}
	}
	if !matched && len(d.o.Kinds) > 0 {
		r.Errors = append(r.Errors, fmt.Sprintf("no kind of the templates is %v", d.o.Kinds))
	}
	if len(jobs) == 0 {
		return jobs, total
	}
	byOwner, err := d.listChildren(ctx, d.o.Namespace, nil)
	for i := range jobs {
		jobs[i].objs, jobs[i].err = byOwner[string(jobs[i].cr.GetUID())], err
	}
	return jobs, total
}

func summaryOf(k *template.Kind) KindSummary {
	r := k.Resource
	return KindSummary{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// listCRs lists the CRs of k that Options select, but those being deleted
// (a reconcile only finalizes them).
func (d *differ) listCRs(ctx context.Context, k *template.Kind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	gvk := k.Resource.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(d.o.Namespace)}
	if d.o.Selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: d.o.Selector})
	}
	if err := d.o.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].GetDeletionTimestamp() == nil {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.GetNamespace() < b.GetNamespace() || a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName()
	})
	return out, nil
}

// listChildren lists, in ns ("" for all), the objects of every allowed kind
// the cluster serves that carry cueop's owner label (and the labels of
// match), by the owner uid the label names: one list per kind, at the
// version the cluster prefers.
func (d *differ) listChildren(ctx context.Context, ns string, match client.MatchingLabels) (map[string][]*unstructured.Unstructured, error) {
	out := map[string][]*unstructured.Unstructured{}
	for _, gk := range d.childKinds() {
		m, err := d.o.Client.RESTMapper().RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s children: %w", gk, err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
		opts := []client.ListOption{client.InNamespace(ns), client.HasLabels{wellknown.LabelOwnerUID}}
		if len(match) > 0 {
			opts = append(opts, match)
		}
		if err := d.o.Client.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("list %s children: %w", gk, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			uid := o.GetLabels()[wellknown.LabelOwnerUID]
			out[uid] = append(out[uid], o)
		}
	}
	return out, nil
}

// childKinds are the allowed child kinds, sorted.
func (d *differ) childKinds() []schema.GroupKind {
	allowed := d.o.Render.AllowedKinds
	if allowed == nil {
		allowed = render.MustKindSet(render.DefaultAllowedKinds)
	}
	out := make([]schema.GroupKind, 0, len(allowed))
	for gk := range allowed {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
