package render_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// floatKind has float fields at every depth a spec can hold them: a
// field, a map's values, a list's items and a nested struct's field, and
// an int and a number beside them.
const floatKind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {
	ratio:   float
	weights: [string]: float
	steps:   [...float]
	nested?: {f: *0.5 | float}
	count:   int
	any:     number
}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {
	apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name
	data: {
		ratio: "\(parent.spec.ratio * 2)"
		sum:   "\(parent.spec.weights.a + parent.spec.steps[0] + parent.spec.nested.f)"
		count: "\(parent.spec.count)", any: "\(parent.spec.any)"
	}
}
`

// TestWholeNumberFillsAFloat: the API server stores a float field's 2.0
// as 2 (the CRD says type: number); the render takes it as the float it
// is, at every depth, and leaves the int and number fields whole.
func TestWholeNumberFillsAFloat(t *testing.T) {
	k := compileKind(t, "app/app.cue", floatKind)
	spec := map[string]any{"ratio": int64(2), "weights": map[string]any{"a": int64(1)}, "steps": []any{int64(3)},
		"nested": map[string]any{"f": int64(4)}, "count": int64(5), "any": int64(6)}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.test.example/v1", "kind": "App",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u"},
		"spec":     spec,
	}}
	before := parent.DeepCopy()
	res, err := render.Render(k, parent, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ratio": "4", "sum": "8", "count": "5", "any": "6"}
	if got := res.Children[0].Object.Object["data"]; !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(parent.Object, before.Object) {
		t.Errorf("the render changed the CR: %v", parent.Object)
	}
}
