package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

func cm(ns, name string, lbl map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(lbl)
	return o
}

// TestRefIndexMatches maps a referenced object to exactly the CRs of its
// namespace that reference it, by name or by selector.
func TestRefIndexMatches(t *testing.T) {
	x := NewRefIndex()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	other := types.NamespacedName{Namespace: "other", Name: "a"}
	byName := render.Reference{ID: "s", APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}
	bySel := render.Reference{ID: "all", APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"shared": "yes"}}}
	secret := render.Reference{ID: "p", APIVersion: "v1", Kind: "Secret", Name: "settings"}
	x.Set(a, []render.Reference{byName})
	x.Set(b, []render.Reference{bySel, secret})
	x.Set(other, []render.Reference{byName})

	for _, c := range []struct {
		obj  *unstructured.Unstructured
		want []types.NamespacedName
	}{
		{cm("ns", "settings", nil), []types.NamespacedName{a}},
		{cm("ns", "x", map[string]string{"shared": "yes"}), []types.NamespacedName{b}},
		{cm("ns", "settings", map[string]string{"shared": "yes"}), []types.NamespacedName{a, b}},
		{cm("ns", "x", nil), nil},
		{cm("elsewhere", "settings", nil), nil},
	} {
		got := x.Match(c.obj)
		slices.SortFunc(got, func(p, q types.NamespacedName) int { return cmpName(p, q) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s/%s %v: CRs %v, want %v", c.obj.GetNamespace(), c.obj.GetName(), c.obj.GetLabels(), got, c.want)
		}
	}
	x.Forget(a)
	x.Set(b, nil)
	if got := x.Match(cm("ns", "settings", map[string]string{"shared": "yes"})); len(got) != 0 {
		t.Errorf("forgotten CRs still matched: %v", got)
	}
	if len(x.records().refNS) != 1 {
		t.Errorf("namespaces left: %v", x.records().refNS)
	}
}

func cmpName(p, q types.NamespacedName) int {
	switch {
	case p.String() < q.String():
		return -1
	case p.String() > q.String():
		return 1
	}
	return 0
}

// TestReadReferencesOneVersionEach: references to one kind at two versions
// (autoscaling/v1 and autoscaling/v2) each resolve to the objects read at
// their own version: a selector lists each object once, a name finds the
// object at the version it names.
func TestReadReferencesOneVersionEach(t *testing.T) {
	hpa := func(apiVersion string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind("HorizontalPodAutoscaler")
		o.SetNamespace("ns")
		o.SetName("web")
		o.SetLabels(map[string]string{"app": "web"})
		return o
	}
	read := func(_ context.Context, gvk schema.GroupVersionKind, _ string) ([]*unstructured.Unstructured, error) {
		return []*unstructured.Unstructured{hpa(gvk.GroupVersion().String())}, nil
	}
	refs := []render.Reference{
		{ID: "all", APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		{ID: "web", APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Name: "web"},
	}
	got, missing, err := ReadReferences(context.Background(), refs, "ns", read)
	if err != nil || missing != "" {
		t.Fatalf("ReadReferences: %v, missing %q", err, missing)
	}
	if objs := got["all"].Objects; len(objs) != 1 || objs[0].GetAPIVersion() != "autoscaling/v1" {
		t.Errorf("references.all: want web once at autoscaling/v1, got %d objects: %v", len(objs), apiVersions(objs))
	}
	if objs := got["web"].Objects; len(objs) != 1 || objs[0].GetAPIVersion() != "autoscaling/v2" {
		t.Errorf("references.web: want web at autoscaling/v2, got %v", apiVersions(objs))
	}
}

func apiVersions(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetAPIVersion())
	}
	return out
}

// TestLoadReferencedWithinRenderBudget: a selector matching more bytes of
// objects than the render memory budget stops reading them once past it,
// and the render is refused as over budget (the CR stalls, naming the
// reference), not run over every object.
func TestLoadReferencedWithinRenderBudget(t *testing.T) {
	loads := 0
	load := func(_ context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		loads++
		o := meta.DeepCopy()
		o.Object["data"] = map[string]any{"d": strings.Repeat("x", 400<<10)}
		return o, nil
	}
	var objs []*unstructured.Unstructured
	for i := range 10 {
		objs = append(objs, cm("ns", fmt.Sprintf("big-%d", i), nil))
	}
	rec := &Reconciler{Cluster: clusterFuncs{load: load}, Options: render.Options{Budget: budget.Budget{Memory: 1 << 20}}}
	_, err := testRun(rec, &template.Kind{}, cm("ns", "cr", nil)).resolver.load(context.Background())(render.Inputs{Referenced: map[string]render.Referenced{"all": {List: true, Objects: objs}}})
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget || !strings.Contains(err.Error(), "references.all: the referenced objects read up to ConfigMap ns/big-2 hold") {
		t.Fatalf("want a RenderBudget refusal naming references.all, got %v", err)
	}
	if loads != 3 {
		t.Errorf("%d objects read, want 3 (the reading stops once past the budget)", loads)
	}
}
