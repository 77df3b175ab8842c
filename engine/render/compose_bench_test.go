package render_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// BenchmarkRenderWebApp is what a reconcile of a WebApp evaluates: its
// references (from the CR alone), then the render with the referenced
// settings ConfigMap, first render (nothing observed).
func BenchmarkRenderWebApp(b *testing.B) {
	k := loadKind(b, "apps.example.com", "WebApp")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": "shop", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"settingsFrom": map[string]any{"name": "settings"}},
	}}
	objs := []*unstructured.Unstructured{configMap("shop", "settings", nil, map[string]any{"A": "1", "B": "2"})}
	b.Run("references", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := render.References(k, cr, render.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("render", func(b *testing.B) {
		refs, err := render.References(k, cr, render.Options{})
		if err != nil {
			b.Fatal(err)
		}
		got, _ := render.Resolve(refs, "shop", objs)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := render.RenderInputs(render.Inputs{Kind: k, Parent: cr, Referenced: got}, render.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
