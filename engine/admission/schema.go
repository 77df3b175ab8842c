package admission

import (
	"encoding/json"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
)

// The metadata of the CRs built from a kind's schema.
const (
	BuiltName      = "sample"
	BuiltNamespace = "default"
	BuiltUID       = "00000000-0000-4000-8000-000000000001"
)

// builtCR is a CR built from the kind's schema, and how findings name it.
type builtCR struct {
	source string
	parent *unstructured.Unstructured
}

// schemaCRs are the CRs of k at its hub version with the specs crdgen
// builds of its schema: the fewest fields (crdgen.Minimal), then every
// field set (crdgen.Every), the second left out when it is the first.
// crd nil is generated.
func schemaCRs(k *template.Kind, crd *apiextensionsv1.CustomResourceDefinition) ([]builtCR, error) {
	if crd == nil {
		var err error
		if crd, err = crdgen.Generate(k); err != nil {
			return nil, err
		}
	}
	spec, ok := specSchema(crd, k.Resource.Version)
	if !ok {
		return nil, nil
	}
	var out []builtCR
	var prev any
	for i, s := range []any{crdgen.Minimal(spec, 0), crdgen.Every(spec, 0)} {
		if i > 0 && reflect.DeepEqual(s, prev) {
			continue
		}
		prev = s
		what := [...]string{"the fewest fields", "every field set"}[i]
		out = append(out, builtCR{
			source: "a " + k.Resource.Kind + " built from its schema (" + what + ")",
			parent: builtParent(k, s),
		})
	}
	return out, nil
}

// specSchema is the schema of spec at version of crd.
func specSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (apiextensionsv1.JSONSchemaProps, bool) {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			s, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
			return s, ok
		}
	}
	return apiextensionsv1.JSONSchemaProps{}, false
}

// builtParent is a CR of k at its hub version with spec, as the API server
// would serve it: named, in a namespace, with a uid.
func builtParent(k *template.Kind, spec any) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{}}
	p.SetGroupVersionKind(k.Resource.GroupVersionKind())
	p.SetName(BuiltName)
	p.SetNamespace(BuiltNamespace)
	p.SetUID(BuiltUID)
	p.Object["spec"] = map[string]any{}
	if m, ok := asServed(spec).(map[string]any); ok {
		p.Object["spec"] = m
	}
	return p
}

// asServed is v as a client decodes it from the API server's JSON: whole
// numbers int64, as CUE wants an int (crdgen gives float64).
func asServed(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}
