package crdgen

import (
	"context"
	"testing"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// crSchema is what the API server makes of a generated CRD to default and
// validate custom resources.
type crSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil without x-kubernetes-validations
}

func newCRSchema(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) *crSchema {
	t.Helper()
	s, err := Structural(crd)
	if err != nil {
		t.Fatal(err)
	}
	internal, err := toInternal(crd)
	if err != nil {
		t.Fatal(err)
	}
	props, err := versionSchema(internal, internal.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	return &crSchema{structural: s, validator: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// admit defaults a custom resource with the given spec as the API server
// does and validates it; it returns the defaulted object and the errors.
func (s *crSchema) admit(spec any) (map[string]any, error) {
	return s.admitUpdate(spec, nil)
}

// admitUpdate is admit for an update of old, an object admit returned
// (nil on create): the CEL rules that compare with oldSelf apply.
func (s *crSchema) admitUpdate(spec any, old map[string]any) (map[string]any, error) {
	obj := map[string]any{
		"apiVersion": "example.com/v1alpha1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w", "namespace": "default"},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	defaulting.Default(obj, s.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
	if s.cel != nil {
		var oldObj any
		if old != nil {
			oldObj = old
		}
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return obj, errs.ToAggregate()
}

// TestDefaulting checks that the API server's structural defaulting fills
// in the template's defaults, also when the spec is omitted.
func TestDefaulting(t *testing.T) {
	src := `#Spec: {
		replicas: *3 | int & >=1
		version: *"7.0" | string
		storage: {size: *"1Gi" | string, class?: string}
		sidecars?: [...{name!: string, port: *8080 | int}]
	}`
	s := newCRSchema(t, generateValid(t, src))
	for name, spec := range map[string]any{
		"empty spec": map[string]any{},
		"no spec":    nil,
		"with list":  map[string]any{"sidecars": []any{map[string]any{"name": "a"}}},
	} {
		obj, err := s.admit(spec)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := obj["spec"].(map[string]any)
		if got["replicas"] != int64(3) || got["version"] != "7.0" {
			t.Errorf("%s: spec %v, want replicas 3 and version 7.0", name, got)
		}
		if size := got["storage"].(map[string]any)["size"]; size != "1Gi" {
			t.Errorf("%s: storage.size %v, want 1Gi", name, size)
		}
		if l, ok := got["sidecars"].([]any); ok && l[0].(map[string]any)["port"] != int64(8080) {
			t.Errorf("%s: sidecars %v, want port 8080", name, l)
		}
	}
}

// TestInstances checks that the API server, with the generated schema,
// accepts and refuses the same specs as CUE does with #Spec.
func TestInstances(t *testing.T) {
	tests := []struct {
		name           string
		src            string
		valid, invalid []string // specs as JSON
	}{
		{"default and bound", `#Spec: replicas: *3 | int & >=1`,
			[]string{`{}`, `{"replicas": 5}`}, []string{`{"replicas": 0}`, `{"replicas": "x"}`, `{"replicas": 1.5}`}},
		{"exclusive bounds", `#Spec: r: >0 & <100`,
			[]string{`{"r": 50}`, `{"r": 0.5}`}, []string{`{"r": 0}`, `{"r": 100}`, `{}`}},
		{"int32", `#Spec: n?: int32`,
			[]string{`{"n": 5}`, `{"n": -2147483648}`}, []string{`{"n": 3000000000}`}},
		{"uint64", `#Spec: n?: uint64`,
			[]string{`{"n": 5}`, `{"n": 9223372036854775807}`}, []string{`{"n": -1}`}},
		{"enum", `#Spec: mode: *"a" | "b"`,
			[]string{`{}`, `{"mode": "b"}`}, []string{`{"mode": "c"}`}},
		{"mixed literals", `#Spec: v: 1 | "one"`,
			[]string{`{"v": 1}`, `{"v": "one"}`}, []string{`{"v": 2}`, `{"v": "two"}`}},
		{"pattern and length", "import \"strings\"\n#Spec: name?: =~\"^[a-z]+$\" & strings.MinRunes(2)",
			[]string{`{"name": "ab"}`}, []string{`{"name": "a"}`, `{"name": "A1"}`}},
		{"negations", `#Spec: s?: string & !="bad" & !~"^x"`,
			[]string{`{"s": "ok"}`}, []string{`{"s": "bad"}`, `{"s": "xy"}`}},
		{"int or string", `#Spec: port?: int & >=0 & <=65535 | =~"^[a-z]+$"`,
			[]string{`{"port": 80}`, `{"port": "http"}`},
			[]string{`{"port": -1}`, `{"port": 70000}`, `{"port": "HTTP"}`, `{"port": true}`}},
		{"int or literal", `#Spec: replicas: int | *"auto"`,
			[]string{`{}`, `{"replicas": 3}`, `{"replicas": "auto"}`}, []string{`{"replicas": "x"}`}},
		{"alternatives", `#Spec: n?: >5 | <1`,
			[]string{`{"n": 6}`, `{"n": 0}`}, []string{`{"n": 3}`}},
		{"enum or pattern", `#Spec: s: *"a" | "b" | =~"^x-"`,
			[]string{`{}`, `{"s": "b"}`, `{"s": "x-y"}`}, []string{`{"s": "c"}`}},
		{"nullable", `#Spec: n?: null | string`,
			[]string{`{"n": null}`, `{"n": "s"}`}, []string{`{"n": 1}`}},
		{"date-time", "import \"time\"\n#Spec: at?: time.Time",
			[]string{`{"at": "2024-01-01T00:00:00Z"}`}, []string{`{"at": "yesterday"}`}},
		{"map", `#Spec: m?: [string]: int`,
			[]string{`{"m": {"a": 1}}`}, []string{`{"m": {"a": "x"}}`}},
		{"list bounds", "import \"list\"\n#Spec: l: [...string] & list.MinItems(1)",
			[]string{`{"l": ["a"]}`}, []string{`{"l": []}`, `{}`, `{"l": [1]}`}},
		{"list of structs", `#Spec: l?: [...{name!: string, w: *1 | int}]`,
			[]string{`{"l": [{"name": "a"}]}`}, []string{`{"l": [{}]}`, `{"l": [{"name": 1}]}`}},
		{"required nested", `#Spec: nested: {a: int}`,
			[]string{`{"nested": {"a": 1}}`}, []string{`{}`, `{"nested": {}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := compileKind(t, tt.src)
			s := newCRSchema(t, generateValid(t, tt.src))
			for _, valid := range []bool{true, false} {
				specs := tt.valid
				if !valid {
					specs = tt.invalid
				}
				for _, js := range specs {
					checkInstance(t, s, k.Spec, js, valid)
				}
			}
		})
	}
}

func checkInstance(t *testing.T, s *crSchema, spec cue.Value, js string, valid bool) {
	t.Helper()
	var inst map[string]any
	if err := utiljson.Unmarshal([]byte(js), &inst); err != nil {
		t.Fatal(err)
	}
	cueErr := spec.Unify(spec.Context().Encode(inst)).Validate(cue.Concrete(true))
	_, apiErr := s.admit(inst)
	if (cueErr == nil) != valid {
		t.Errorf("%s: CUE says %v, want valid=%v", js, cueErr, valid)
	}
	if (apiErr == nil) != valid {
		t.Errorf("%s: API server says %v, want valid=%v", js, apiErr, valid)
	}
}
