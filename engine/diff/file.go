package diff

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/wellknown"
)

// placeholderUID stands for the uid of a CR that does not exist yet, so
// that its children's owner references are valid in a dry run.
const placeholderUID types.UID = "00000000-0000-0000-0000-000000000000"

// fileJobs are the CRs of Options.Files, each as applying it would make
// it: dry-run applied as the user's kubectl apply would (defaults of the
// CRD filled, its validation run), with the children of the live CR of
// that name, if any.
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
		j := job{kind: k}
		var how *FileApply
		j.cr, j.objs, j.crDiff, how, j.err = d.fileCR(ctx, f)
		if how != nil {
			r.Files = append(r.Files, *how)
		}
		jobs = append(jobs, j)
	}
	return jobs, total
}

// fileCR dry-runs applying f as the user would (applyFile), lists the
// children of the live CR and diffs the CR itself.
func (d *differ) fileCR(ctx context.Context, f *unstructured.Unstructured) (after *unstructured.Unstructured, children []*unstructured.Unstructured, crDiff string, how *FileApply, err error) {
	cr := d.asApplied(f)
	subject := fmt.Sprintf("%s %s/%s", cr.GetKind(), cr.GetNamespace(), cr.GetName())
	live, err := d.liveCR(ctx, cr)
	if err != nil {
		return cr, nil, "", nil, fmt.Errorf("%s: %w", subject, err)
	}
	mode, merge, why := modeFor(d.o.Apply, live)
	how = &FileApply{Kind: cr.GetKind(), Namespace: cr.GetNamespace(), Name: cr.GetName(), Mode: mode, Why: why}
	got, err := d.applyFile(ctx, merge, cr, live)
	if err != nil {
		return cr, nil, "", how, fmt.Errorf("%s: the API server refuses the CR: %w", subject, err)
	}
	if got.GetUID() == "" {
		got.SetUID(placeholderUID)
	}
	byOwner, err := d.listChildren(ctx, cr.GetNamespace(), client.MatchingLabels{wellknown.LabelOwnerUID: string(got.GetUID())})
	if err != nil {
		return got, nil, "", how, fmt.Errorf("%s: %w", subject, err)
	}
	return got, byOwner[string(got.GetUID())], crDiffOf(live, got, cr), how, nil
}

// asApplied is f in its namespace (-n's, or default), without status and
// the metadata the API server sets.
func (d *differ) asApplied(f *unstructured.Unstructured) *unstructured.Unstructured {
	cr := f.DeepCopy()
	if cr.GetNamespace() == "" {
		ns := d.o.Namespace
		if ns == "" {
			ns = "default"
		}
		cr.SetNamespace(ns)
	}
	delete(cr.Object, "status")
	for _, f := range noise {
		unstructured.RemoveNestedField(cr.Object, "metadata", f)
	}
	return cr
}

// liveCR is the live CR of cr's name, nil when there is none.
func (d *differ) liveCR(ctx context.Context, cr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(cr.GroupVersionKind())
	err := d.o.Client.Get(ctx, client.ObjectKeyFromObject(cr), live)
	switch {
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("the cluster has no CRD for %s", cr.GroupVersionKind())
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return live, nil
}

// applyFile dry-runs applying cr over live (nil when absent): kubectl's
// three-way merge patch when merge, else a server-side apply.
func (d *differ) applyFile(ctx context.Context, merge bool, cr, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if merge {
		return d.clientSideApply(ctx, cr, live)
	}
	got := cr.DeepCopy()
	err := d.o.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(got),
		client.FieldOwner(CRFieldManager), client.ForceOwnership, client.DryRunAll)
	return got, err
}

// crDiffOf is the diff of what applying the file changes in the CR itself:
// its spec, labels and annotations, without the fields the file does not
// set and the apply does not change (withoutDefaults).
func crDiffOf(live, after, file *unstructured.Unstructured) string {
	name := fmt.Sprintf("%s %s/%s", after.GetKind(), after.GetNamespace(), after.GetName())
	var from map[string]any
	if live != nil {
		from = crView(live)
	}
	from, to := withoutDefaults(from, crView(after), crView(file))
	if live == nil {
		return Unified(name+" absent", name+" after", "", toYAML(to))
	}
	return Unified(name+" live", name+" after", toYAML(from), toYAML(to))
}

// crView is what a user writes of a CR: its names, labels, annotations and
// spec; kubectl's last-applied-configuration annotation (a copy of the
// file) is left out.
func crView(o *unstructured.Unstructured) map[string]any {
	c := clean(o)
	md, _ := c["metadata"].(map[string]any)
	keep := map[string]any{}
	for _, f := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := md[f]; ok {
			keep[f] = v
		}
	}
	if ann, ok := keep["annotations"].(map[string]any); ok {
		delete(ann, corev1.LastAppliedConfigAnnotation)
		if len(ann) == 0 {
			delete(keep, "annotations")
		}
	}
	out := map[string]any{"apiVersion": c["apiVersion"], "kind": c["kind"], "metadata": keep}
	if spec, ok := c["spec"]; ok {
		out["spec"] = spec
	}
	return out
}
