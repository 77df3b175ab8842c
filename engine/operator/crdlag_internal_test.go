package operator

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestLackingFields: what a revision's schema has that the served one
// lacks, as the API server would prune it: a property, one below a list's
// items, the keys of a map the served schema names field by field; not a
// field the served schema keeps as a key of its map, nor anything below
// x-kubernetes-preserve-unknown-fields.
func TestLackingFields(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	mapOf := func(v apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}}
	}
	list := func(v apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &v}}
	}
	keep := true
	for _, c := range []struct {
		what       string
		want, have apiextensionsv1.JSONSchemaProps
		lacks      []string
	}{
		{"a new property", obj(map[string]apiextensionsv1.JSONSchemaProps{"port": str, "note": str}), obj(map[string]apiextensionsv1.JSONSchemaProps{"note": str}), []string{"port"}},
		{"below list items", obj(map[string]apiextensionsv1.JSONSchemaProps{"b": list(obj(map[string]apiextensionsv1.JSONSchemaProps{"x": str, "y": str}))}),
			obj(map[string]apiextensionsv1.JSONSchemaProps{"b": list(obj(map[string]apiextensionsv1.JSONSchemaProps{"x": str}))}), []string{"b[].y"}},
		{"named fields where the CRD has a map", obj(map[string]apiextensionsv1.JSONSchemaProps{"labels": obj(map[string]apiextensionsv1.JSONSchemaProps{"app": str})}),
			obj(map[string]apiextensionsv1.JSONSchemaProps{"labels": mapOf(str)}), nil},
		{"a map where the CRD names fields", obj(map[string]apiextensionsv1.JSONSchemaProps{"labels": mapOf(str)}),
			obj(map[string]apiextensionsv1.JSONSchemaProps{"labels": obj(map[string]apiextensionsv1.JSONSchemaProps{"app": str})}), []string{"labels{}"}},
		{"preserve unknown fields", obj(map[string]apiextensionsv1.JSONSchemaProps{"raw": obj(map[string]apiextensionsv1.JSONSchemaProps{"a": str})}),
			obj(map[string]apiextensionsv1.JSONSchemaProps{"raw": {Type: "object", XPreserveUnknownFields: &keep}}), nil},
	} {
		var got []string
		lacking(&c.want, &c.have, "", &got)
		slices.Sort(got)
		if !slices.Equal(got, c.lacks) {
			t.Errorf("%s: lacks %v, want %v", c.what, got, c.lacks)
		}
	}
}
