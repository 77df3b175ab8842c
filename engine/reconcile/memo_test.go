package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
)

// TestMemoSameAsFreshRender walks one RedisCluster through a life of
// reconciles (first render, Pods appearing, becoming ready, unread fields
// changing, a spec change, a rollout of a template edit, the parent's
// status and labels changing) and checks at every step that the memo's
// result, reused or fresh, is the result of a fresh render, and that it
// reuses exactly when nothing the render reads changed.
func TestMemoSameAsFreshRender(t *testing.T) {
	v1 := loadKinds(t, "../../templates").Lookup("cache.example.com", "RedisCluster")
	v2 := loadKinds(t, editedTemplates(t)).Lookup("cache.example.com", "RedisCluster")
	if v1.Revision == v2.Revision {
		t.Fatal("the edited template has the same revision")
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(3), "version": "7.2"},
	}}
	pods := map[string]*unstructured.Unstructured{}
	for _, id := range []string{"pod-0", "pod-1", "pod-2"} {
		pods[id] = livePod(t, id, "False")
	}
	var m crs
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	kind := v1
	step := func(name string, wantHit bool) *render.Result {
		t.Helper()
		in := render.Inputs{Kind: kind, Parent: cr.DeepCopy(), Observed: copyObjects(pods)}
		got, hit, err := m.render(context.Background(), render.InProcess{}, key, in, render.Options{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := render.Render(kind, cr, pods, render.Options{})
		if err != nil {
			t.Fatalf("%s: fresh render: %v", name, err)
		}
		if hit != wantHit {
			t.Errorf("%s: reused %v, want %v", name, hit, wantHit)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: memo result\n%+v\nfresh render\n%+v", name, got, want)
		}
		return got
	}
	first := map[string]*unstructured.Unstructured{}
	pods, first = first, pods
	step("first render", false)
	step("resync", true)
	pods = first
	step("Pods observed, not ready", false)
	step("resync", true)
	pods["pod-1"].Object["metadata"].(map[string]any)["resourceVersion"] = "999"
	pods["pod-1"].Object["status"].(map[string]any)["podIP"] = "10.0.0.9"
	step("Pod fields the template does not read", true)
	pods["pod-1"] = livePod(t, "pod-1", "True")
	if res := step("a Pod ready", false); res.Status["readyReplicas"] != int64(1) {
		t.Errorf("readyReplicas %v, want 1", res.Status["readyReplicas"])
	}
	for _, id := range []string{"pod-0", "pod-2"} {
		pods[id] = livePod(t, id, "True")
	}
	if res := step("every Pod ready", false); !res.Ready {
		t.Error("not ready with every Pod ready")
	}
	unstructured.SetNestedField(cr.Object, "Running", "status", "phase")
	cr.SetResourceVersion("12")
	cr.SetLabels(map[string]string{"team": "a"})
	step("parent status and labels (not read)", true)
	unstructured.SetNestedField(cr.Object, "7.4", "spec", "version")
	cr.SetGeneration(2)
	step("spec change", false)
	step("resync", true)
	kind = v2
	res := step("rollout of a template edit", false)
	if res.Children[2].Object.GetLabels()["edited"] != "yes" {
		t.Errorf("pod-0 labels %v lack the edit", res.Children[2].Object.GetLabels())
	}
	step("resync", true)
	kind = v1
	step("rollback", false)
	if n, _ := m.size(); n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
	m.forget(key, true)
	if n, _ := m.size(); n != 0 {
		t.Errorf("%d entries after forget, want 0", n)
	}
}

// TestMemoDefaultReady: a kind without `ready` is ready by kstatus over
// the whole live objects, which the digest does not cover; a reused result
// recomputes it.
func TestMemoDefaultReady(t *testing.T) {
	k := loadKinds(t, "../../templates").Lookup("web.example.com", "StaticSite")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.example.com/v1", "kind": "StaticSite",
		"metadata": map[string]any{"name": "docs", "namespace": "web", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	md := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": "web", "generation": int64(1)}
	}
	deployment := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md("docs"),
		"spec": map[string]any{"replicas": int64(2)},
		"status": map[string]any{
			"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2),
			"readyReplicas": int64(2), "availableReplicas": int64(2),
			"conditions": []any{map[string]any{"type": "Available", "status": "True"}},
		},
	}}
	observed := map[string]*unstructured.Unstructured{
		"deployment": deployment,
		"pages":      {Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md("docs-pages")}},
		"service":    {Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": md("docs"), "spec": map[string]any{"type": "ClusterIP"}}},
	}
	var m crs
	key := types.NamespacedName{Namespace: "web", Name: "docs"}
	for i, wantReady := range []bool{true, false} {
		if i == 1 {
			// Not read by the template, read by kstatus: a newer generation.
			deployment.Object["metadata"].(map[string]any)["generation"] = int64(2)
		}
		in := render.Inputs{Kind: k, Parent: cr, Observed: observed}
		got, hit, err := m.render(context.Background(), render.InProcess{}, key, in, render.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if hit != (i == 1) || got.Ready != wantReady {
			t.Errorf("step %d: reused %v, ready %v; want reused %v, ready %v", i, hit, got.Ready, i == 1, wantReady)
		}
	}
}

func livePod(t *testing.T, id, ready string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../render/testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	o.SetName("r-" + strings.TrimPrefix(id, "pod-"))
	for _, c := range o.Object["status"].(map[string]any)["conditions"].([]any) {
		if c := c.(map[string]any); c["type"] == "Ready" {
			c["status"] = ready
		}
	}
	return o
}

func copyObjects(in map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(in))
	for id, o := range in {
		out[id] = o.DeepCopy()
	}
	return out
}

func loadKinds(t *testing.T, dir string) *template.Set {
	t.Helper()
	set := templatetest.Load(t, dir)
	return set
}

// editedTemplates is a copy of the project's templates whose Pods carry
// one more label.
func editedTemplates(t *testing.T) string {
	t.Helper()
	dir := testkit.CopyTemplates(t)
	testkit.EditFile(t, filepath.Join(dir, "rediscluster", "rediscluster.cue"), testkit.Replace(
		`metadata: {name: "\(_name)-\(i)", labels: _selector}`, `metadata: {name: "\(_name)-\(i)", labels: _selector & {edited: "yes"}}`))
	return dir
}

// BenchmarkMemoHit is a reconcile's render of a converged RedisCluster of
// 3 replicas with full Pods observed when nothing it reads changed: the
// digest of its inputs and the unpacking of the previous result.
func BenchmarkMemoHit(b *testing.B) {
	set := templatetest.Load(b, "../../templates")
	k := set.Lookup("cache.example.com", "RedisCluster")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(3), "version": "7.2"},
	}}
	t := &testing.T{}
	pods := map[string]*unstructured.Unstructured{}
	for _, id := range []string{"pod-0", "pod-1", "pod-2"} {
		pods[id] = livePod(t, id, "True")
	}
	var m crs
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	in := render.Inputs{Kind: k, Parent: cr, Observed: pods}
	if _, _, err := m.render(context.Background(), render.InProcess{}, key, in, render.Options{}, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, hit, _ := m.render(context.Background(), render.InProcess{}, key, in, render.Options{}, nil); !hit {
			b.Fatal("miss")
		}
	}
}

// BenchmarkMemoMiss is BenchmarkMemoHit with the inputs changing at every
// reconcile (a Pod's Ready condition flips): the digest, a render and the
// packing of its result, against BenchmarkRenderFullPods of engine/render
// for the render alone.
func BenchmarkMemoMiss(b *testing.B) {
	set := templatetest.Load(b, "../../templates")
	k := set.Lookup("cache.example.com", "RedisCluster")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(3), "version": "7.2"},
	}}
	t := &testing.T{}
	ins := [2]render.Inputs{}
	for i, ready := range []string{"True", "False"} {
		pods := map[string]*unstructured.Unstructured{}
		for _, id := range []string{"pod-0", "pod-1", "pod-2"} {
			pods[id] = livePod(t, id, ready)
		}
		ins[i] = render.Inputs{Kind: k, Parent: cr, Observed: pods}
	}
	var m crs
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, hit, err := m.render(context.Background(), render.InProcess{}, key, ins[i%2], render.Options{}, nil); hit || err != nil {
			b.Fatal("hit", err)
		}
	}
}

// TestMemoLoadsReferencedOnMissOnly: with the referenced objects known by
// their metadata, a reconcile whose inputs did not change reuses the render
// without reading them whole; a new resourceVersion reads and renders.
func TestMemoLoadsReferencedOnMissOnly(t *testing.T) {
	k := loadKinds(t, "../../templates").Lookup("apps.example.com", "WebApp")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": "web", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"settingsFrom": map[string]any{"name": "settings"}},
	}}
	meta := func(rv string) map[string]render.Referenced {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings", "namespace": "web", "uid": "cm-1", "resourceVersion": rv}}}
		return map[string]render.Referenced{"settings": {Objects: []*unstructured.Unstructured{o}}}
	}
	loads := 0
	load := func(in render.Inputs) (render.Inputs, error) {
		loads++
		o := in.Referenced["settings"].Objects[0].DeepCopy()
		o.Object["data"] = map[string]any{"LEVEL": "v" + o.GetResourceVersion()}
		in.Referenced = map[string]render.Referenced{"settings": {Objects: []*unstructured.Unstructured{o}}}
		return in, nil
	}
	var m crs
	key := types.NamespacedName{Namespace: "web", Name: "shop"}
	for i, step := range []struct {
		rv        string
		hit       bool
		wantLoads int
	}{{"7", false, 1}, {"7", true, 1}, {"8", false, 2}, {"8", true, 2}} {
		_, hit, err := m.render(context.Background(), render.InProcess{}, key, render.Inputs{Kind: k, Parent: cr, Referenced: meta(step.rv)}, render.Options{}, load)
		if err != nil {
			t.Fatal(err)
		}
		if hit != step.hit || loads != step.wantLoads {
			t.Errorf("step %d (resourceVersion %s): reused %v, %d loads; want reused %v, %d loads", i, step.rv, hit, loads, step.hit, step.wantLoads)
		}
	}
}
