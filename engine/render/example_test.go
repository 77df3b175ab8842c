package render_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// A RedisCluster with two replicas renders a ConfigMap, two Pods and a
// Service; with no Pod observed yet, none is ready.
func ExampleRender() {
	set, err := template.Load("../../templates")
	if err != nil {
		panic(err)
	}
	kind := set.Lookup("cache.example.com", "RedisCluster")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1",
		"kind":       "RedisCluster",
		"metadata":   map[string]any{"name": "demo", "namespace": "default"},
		"spec":       map[string]any{"replicas": int64(2)},
	}}
	res, err := render.Render(kind, cr, nil, render.Options{})
	if err != nil {
		panic(err)
	}
	for _, c := range res.Children {
		fmt.Printf("%s: %s %s\n", c.ID, c.Object.GetKind(), c.Object.GetName())
	}
	fmt.Println("phase:", res.Status["phase"], "ready:", res.Ready)
	// Output:
	// config: ConfigMap demo-config
	// pod-0: Pod demo-0
	// pod-1: Pod demo-1
	// service: Service demo
	// phase: Pending ready: false
}
