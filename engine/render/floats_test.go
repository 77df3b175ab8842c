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

// shapeKind has float fields in the alternatives of a disjunction of
// structs, which the CRD gives as oneOf.
const shapeKind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {
	shape: {radius: float} | {side: float, count: int}
	shapes?: [...({radius: float} | {side: float, count: int})]
}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {
	apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name
	data: {
		if parent.spec.shape.radius != _|_ {shape: "circle \(parent.spec.shape.radius * 2)"}
		if parent.spec.shape.side != _|_ {shape: "square \(parent.spec.shape.side * 2) \(parent.spec.shape.count)"}
		shapes: "\(len(parent.spec.shapes))"
	}
}
`

// TestWholeNumberFillsAFloatInADisjunction: a whole number at a float
// field of an alternative of a disjunction of structs is taken as the
// float it is, at the alternative it belongs to, in a field and in a
// list's items; an int of that alternative stays whole.
func TestWholeNumberFillsAFloatInADisjunction(t *testing.T) {
	k := compileKind(t, "app/app.cue", shapeKind)
	for _, c := range []struct {
		shape map[string]any
		want  string
	}{
		{map[string]any{"radius": int64(2)}, "circle 4"},
		{map[string]any{"side": int64(3), "count": int64(2)}, "square 6 2"},
	} {
		parent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.test.example/v1", "kind": "App",
			"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u"},
			"spec": map[string]any{"shape": c.shape, "shapes": []any{
				map[string]any{"radius": int64(1)}, map[string]any{"side": int64(1), "count": int64(1)}}},
		}}
		res, err := render.Render(k, parent, nil, render.Options{})
		if err != nil {
			t.Errorf("shape %v: %v", c.shape, err)
			continue
		}
		want := map[string]any{"shape": c.want, "shapes": "2"}
		if got := res.Children[0].Object.Object["data"]; !reflect.DeepEqual(got, want) {
			t.Errorf("shape %v: data = %v, want %v", c.shape, got, want)
		}
	}
}
