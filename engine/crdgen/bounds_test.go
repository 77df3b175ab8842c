package crdgen

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestBounds: every bound of a spec schema is listed with the value at its
// limit: numbers at their maximum (one below an exclusive one), strings
// of the longest length, lists and maps of the most items with each item
// at its own limits (distinct, as unique items must be), nested objects'
// fields apart; an enum and an unbounded field are no bound.
func TestBounds(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	f64 := func(n float64) *float64 { return &n }
	item := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"port"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"port": {Type: "integer", Minimum: f64(1), Maximum: f64(65535)},
		"name": {Type: "string", MaxLength: i64(3)},
		"note": {Type: "string"},
	}}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"count": {Type: "integer", Maximum: f64(10), ExclusiveMaximum: true},
		"ratio": {Type: "number", Maximum: f64(0.5)},
		"line":  {Type: "string", MaxLength: i64(4)},
		"mode":  {Type: "string", MaxLength: i64(4), Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}}},
		"free":  {Type: "string"},
		"hosts": {Type: "array", MaxItems: i64(3), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: i64(2)}}},
		"ports": {Type: "array", MaxItems: i64(2), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}},
		"env": {Type: "object", MaxProperties: i64(2), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
			Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: i64(1)}}},
		"nested": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"weight": {Type: "integer", Maximum: f64(3)}}},
	}}
	var got []string
	for _, b := range Bounds(spec) {
		got = append(got, b.String())
		want := map[string]any{
			"spec.count":         int64(9),
			"spec.ratio":         0.5,
			"spec.line":          "aaaa",
			"spec.hosts":         []any{"aa", "ba", "ca"},
			"spec.ports":         []any{map[string]any{"port": int64(65535), "name": "aaa"}, map[string]any{"port": int64(65535), "name": "baa"}},
			"spec.env":           map[string]any{"aaaaaaaa": "a", "baaaaaaa": "b"},
			"spec.nested.weight": int64(3),
		}[b.Path]
		if !reflect.DeepEqual(b.Value, want) {
			t.Errorf("%s: value %#v, want %#v", b, b.Value, want)
		}
	}
	want := "spec.count at <10, spec.env at struct.MaxFields(2), spec.hosts at list.MaxItems(3), spec.line at strings.MaxRunes(4), " +
		"spec.nested.weight at <=3, spec.ports at list.MaxItems(2), spec.ratio at <=0.5"
	if strings.Join(got, ", ") != want {
		t.Errorf("Bounds:\n%s\nwant\n%s", strings.Join(got, ", "), want)
	}
}
