package render_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// BenchmarkRender renders a RedisCluster with a compiled template reused, as
// the controller does per reconcile, with every Pod observed ready.
func BenchmarkRender(b *testing.B) {
	k := loadKind(b, "cache.example.com", "RedisCluster")
	for _, replicas := range []int64{3, 30} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			cr := redis(map[string]any{"replicas": replicas, "version": "7.2"})
			observed := readyPods(replicas)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := render.Render(k, cr, observed, render.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderFullPods is BenchmarkRender/replicas=3 with the Pods as
// the API server returns them (testdata/pod.json: spec, status, owner
// reference; no managedFields, which the render strips), which cost far
// more to convert than readyPods.
func BenchmarkRenderFullPods(b *testing.B) {
	k := loadKind(b, "cache.example.com", "RedisCluster")
	data, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	cr := redis(map[string]any{"replicas": int64(3), "version": "7.2"})
	observed := map[string]*unstructured.Unstructured{}
	for i := range 3 {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		o.SetName(fmt.Sprintf("r-%d", i))
		observed[fmt.Sprintf("pod-%d", i)] = o
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Render(k, cr, observed, render.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func readyPods(n int64) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for i := range n {
		out[fmt.Sprintf("pod-%d", i)] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("r-%d", i), "namespace": "ns"},
			"status": map[string]any{"phase": "Running", "conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
			}},
		}}
	}
	return out
}

// BenchmarkRenderStaticSite renders a StaticSite with 2 replicas (a
// Deployment built on embedded YAML, a ConfigMap and a Service) with its
// three children observed and the Deployment available.
func BenchmarkRenderStaticSite(b *testing.B) {
	k := loadKind(b, "web.example.com", "StaticSite")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.example.com/v1", "kind": "StaticSite",
		"metadata": map[string]any{"name": "docs", "namespace": "web", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	observed := staticSiteObserved()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Render(k, cr, observed, render.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func staticSiteObserved() map[string]*unstructured.Unstructured {
	md := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": "web", "generation": int64(1)}
	}
	return map[string]*unstructured.Unstructured{
		"deployment": {Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md("docs"),
			"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{
				"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2),
				"readyReplicas": int64(2), "availableReplicas": int64(2),
				"conditions": []any{
					map[string]any{"type": "Available", "status": "True"},
					map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
				},
			},
		}},
		"pages":   {Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md("docs-pages")}},
		"service": {Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": md("docs"), "spec": map[string]any{"type": "ClusterIP"}}},
	}
}
