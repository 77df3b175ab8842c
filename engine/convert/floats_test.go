package convert_test

import (
	"reflect"
	"testing"

	"github.com/cueop/cueop/engine/convert"
)

// floatSpec is a kind whose float field v2 renames.
const floatSpec = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {ratio: float, steps?: [...float]}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {factor: float, steps?: [...float]}
	toHub: {in: spec: _, out: spec: {ratio: in.spec.factor, if in.spec.steps != _|_ {steps: in.spec.steps}}}
	fromHub: {in: spec: _, out: spec: {factor: in.spec.ratio, if in.spec.steps != _|_ {steps: in.spec.steps}}}
}
`

// TestWholeNumberConvertsAsAFloat: a float field's 2.0, stored as 2 by
// the API server, converts both ways, by the strict converter and the
// lenient one alike.
func TestWholeNumberConvertsAsAFloat(t *testing.T) {
	c := mustLoad(t, floatSpec)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x"}, "spec": {"ratio": 2, "steps": [1, 2.5]}}`)
	for name, c := range map[string]*convert.Converter{"strict": c, "lenient": c.Lenient()} {
		v2, err := c.Convert(in, "v2")
		if err != nil {
			t.Fatalf("%s: Convert to v2: %v", name, err)
		}
		if want := map[string]any{"factor": int64(2), "steps": []any{int64(1), 2.5}}; !reflect.DeepEqual(v2.Object["spec"], want) {
			t.Errorf("%s: v2 spec = %v, want %v", name, v2.Object["spec"], want)
		}
		back, err := c.Convert(v2, "v1")
		if err != nil {
			t.Fatalf("%s: Convert to v1: %v", name, err)
		}
		if !reflect.DeepEqual(back.Object, in.Object) {
			t.Errorf("%s: round trip = %v, want %v", name, back.Object, in.Object)
		}
	}
}
