package crdgen_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/crdgen"
)

// values counts the list elements and map entries of v.
func values(v any) int {
	n := 0
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += 1 + values(e)
		}
	case map[string]any:
		for _, e := range x {
			n += 1 + values(e)
		}
	}
	return n
}

// TestFilledBounded: a schema of lists of lists 20 deep, none bounded,
// is filled with two elements a list as far as 4096 elements go, then
// with one (before: 2^20 lists of two, a million elements, and a
// template of 30 such levels exhausted the operator's memory at reload);
// the samples are the same each time.
func TestFilledBounded(t *testing.T) {
	s := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	for range 20 {
		inner := s
		s = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &inner}}
	}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": s, "b": s, "c": s}}
	v := crdgen.Filled(spec, 0, 2)
	// 4096, and the lists begun with two elements before: one each a level.
	if n := values(v); n > 2*4096 {
		t.Errorf("Filled of lists 20 deep holds %d values, want about 4096", n)
	}
	if l, _ := v.(map[string]any)["a"].([]any); len(l) != 2 {
		t.Errorf("the first list holds %d elements, want 2", len(l))
	}
	for range 5 {
		samples := crdgen.Samples(spec)
		if again := crdgen.Samples(spec); len(samples) != len(again) || values(samples) != values(again) {
			t.Fatalf("samples differ from one call to the next")
		}
	}
}
