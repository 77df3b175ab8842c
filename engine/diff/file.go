package diff

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
)

// placeholderUID stands for the uid of a CR that does not exist yet, so
// that its children's owner references are valid in a dry run.
const placeholderUID types.UID = "00000000-0000-0000-0000-000000000000"

// fileJobs are the CRs of Options.Files, each as applying it would make
// it: dry-run applied (defaults of the CRD filled, its validation run),
// with the children of the live CR of that name, if any.
func (d *differ) fileJobs(ctx context.Context, r *Report) ([]job, map[schema.GroupKind]int) {
	total := map[schema.GroupKind]int{}
	var jobs []job
	for _, f := range d.o.Files {
		gvk := f.GroupVersionKind()
		k := d.o.Set.Lookup(gvk.Group, gvk.Kind)
		if k == nil || k.Resource.Version != gvk.Version {
			r.Errors = append(r.Errors, fmt.Sprintf("%s %s: no template serves %s", gvk.Kind, f.GetName(), gvk))
			continue
		}
		gk := gvk.GroupKind()
		if _, seen := total[gk]; !seen {
			r.Kinds = append(r.Kinds, summaryOf(k))
		}
		total[gk]++
		j := job{kind: k, cr: f}
		j.cr, j.objs, j.err = d.fileCR(ctx, f)
		if j.err == nil {
			j.crDiff, j.err = d.crDiff(ctx, j.cr)
		}
		jobs = append(jobs, j)
	}
	return jobs, total
}

// fileCR dry-run applies f and lists the children of the live CR.
func (d *differ) fileCR(ctx context.Context, f *unstructured.Unstructured) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	cr := f.DeepCopy()
	if cr.GetNamespace() == "" {
		ns := d.o.Namespace
		if ns == "" {
			ns = "default"
		}
		cr.SetNamespace(ns)
	}
	subject := fmt.Sprintf("%s %s/%s", cr.GetKind(), cr.GetNamespace(), cr.GetName())
	for _, f := range []string{"status"} {
		delete(cr.Object, f)
	}
	for _, f := range noise {
		unstructured.RemoveNestedField(cr.Object, "metadata", f)
	}
	got := cr.DeepCopy()
	err := d.o.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(got),
		client.FieldOwner(CRFieldManager), client.ForceOwnership, client.DryRunAll)
	if meta.IsNoMatchError(err) {
		return cr, nil, fmt.Errorf("%s: the cluster has no CRD for %s", subject, cr.GroupVersionKind())
	}
	if err != nil {
		return cr, nil, fmt.Errorf("%s: the API server refuses the CR: %w", subject, err)
	}
	if got.GetUID() == "" {
		got.SetUID(placeholderUID)
	}
	byOwner, err := d.listChildren(ctx, cr.GetNamespace(), client.MatchingLabels{render.LabelOwnerUID: string(got.GetUID())})
	if err != nil {
		return got, nil, fmt.Errorf("%s: %w", subject, err)
	}
	return got, byOwner[string(got.GetUID())], nil
}

// crDiff is the diff of what applying the file changes in the CR itself:
// its spec, labels and annotations.
func (d *differ) crDiff(ctx context.Context, after *unstructured.Unstructured) (string, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(after.GroupVersionKind())
	err := d.o.Client.Get(ctx, client.ObjectKeyFromObject(after), live)
	name := fmt.Sprintf("%s %s/%s", after.GetKind(), after.GetNamespace(), after.GetName())
	switch {
	case apierrors.IsNotFound(err):
		return Unified(name+" absent", name+" after", "", toYAML(crView(after))), nil
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return Unified(name+" live", name+" after", toYAML(crView(live)), toYAML(crView(after))), nil
}

// crView is what a user writes of a CR: its names, labels, annotations and
// spec.
func crView(o *unstructured.Unstructured) map[string]any {
	c := clean(o)
	md, _ := c["metadata"].(map[string]any)
	keep := map[string]any{}
	for _, f := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := md[f]; ok {
			keep[f] = v
		}
	}
	out := map[string]any{"apiVersion": c["apiVersion"], "kind": c["kind"], "metadata": keep}
	if spec, ok := c["spec"]; ok {
		out["spec"] = spec
	}
	return out
}
