package render_test

import (
	"fmt"
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
