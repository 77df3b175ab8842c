package crdgen

import (
	"encoding/json"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/template"
)

// testResource is the resource of the kinds the tests compile.
var testResource = template.Resource{Group: "example.com", Version: "v1alpha1", Kind: "Widget"}

// compileKind compiles src as the file spec.cue and returns the kind made
// of its #Spec and #Status.
func compileKind(t testing.TB, src string) *template.Kind {
	t.Helper()
	v := cuecontext.New().CompileString(src, cue.Filename("spec.cue"))
	if err := v.Err(); err != nil {
		t.Fatalf("compile: %v", err)
	}
	return testKind(v)
}

// testKind returns the kind made of v's #Spec and #Status.
func testKind(v cue.Value) *template.Kind {
	return &template.Kind{
		Name:     "widget",
		Revision: "r1",
		Resource: testResource,
		Spec:     v.LookupPath(cue.ParsePath("#Spec")),
		Status:   v.LookupPath(cue.ParsePath("#Status")),
		Value:    v,
	}
}

// generateValid generates the CRD of src and requires that it passes
// Validate.
func generateValid(t testing.TB, src string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := Generate(compileKind(t, src))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if err := Validate(crd); err != nil {
		t.Fatalf("validate: %v\n%s", err, toYAML(t, crd))
	}
	return crd
}

func rootOf(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

func specOf(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.JSONSchemaProps {
	return rootOf(crd).Properties["spec"]
}

func toYAML(t testing.TB, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

// assertSchema compares s with the schema written as YAML in want.
func assertSchema(t testing.TB, s apiextensionsv1.JSONSchemaProps, want string) {
	t.Helper()
	var w apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if got, want := toYAML(t, s), toYAML(t, w); got != want {
		t.Errorf("schema:\n%s\nwant:\n%s", got, want)
	}
}

func yamlUnmarshal(s string, v any) error { return yaml.UnmarshalStrict([]byte(s), v) }

// quote returns s as a YAML (JSON) string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
