package schemacompat_test

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/schemacompat"
)

// schema parses a schema written in YAML flow style.
func schema(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), s); err != nil {
		t.Fatalf("schema %s: %v", y, err)
	}
	return s
}

// root is the schema of a CR whose spec has the schema spec.
func root(spec string) string {
	return "{type: object, properties: {spec: " + spec + "}}"
}

// summary is each change as `B|S <change>`, sorted.
func summary(cs []schemacompat.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		mark := "S "
		if c.Breaking {
			mark = "B "
		}
		out[i] = mark + c.String()
	}
	slices.Sort(out)
	return out
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, next string // the spec's schema
		want      []string
	}{
		// Fields.
		{"new optional field", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer}, b: {type: string}}}`,
			[]string{"S v1 spec.b: added none -> optional"}},
		{"new field with a default", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer}, b: {type: integer, default: 3}}}`,
			[]string{"S v1 spec.b: added none -> default 3"}},
		{"new required field", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, required: [b], properties: {a: {type: integer}, b: {type: integer}}}`,
			[]string{"B v1 spec.b: added none -> required"}},
		{"field removed", `{type: object, properties: {a: {type: integer}, b: {type: string}}}`,
			`{type: object, properties: {a: {type: integer}}}`,
			[]string{"B v1 spec.b: removed"}},
		{"field renamed is one change", `{type: object, properties: {replicas: {type: integer, default: 3, minimum: 1, description: Pods.}}}`,
			`{type: object, properties: {size: {type: integer, default: 3, minimum: 1, description: Number of Pods.}}}`,
			[]string{"B v1 spec.replicas -> spec.size: renamed"}},
		{"a rename needs the same schema", `{type: object, properties: {replicas: {type: integer, default: 3}}}`,
			`{type: object, properties: {size: {type: integer, default: 4}}}`,
			[]string{"B v1 spec.replicas: removed", "S v1 spec.size: added none -> default 4"}},
		{"an ambiguous rename is a removal and an addition", `{type: object, properties: {a: {type: integer}, b: {type: integer}}}`,
			`{type: object, properties: {c: {type: integer}}}`,
			[]string{"B v1 spec.a: removed", "B v1 spec.b: removed", "S v1 spec.c: added none -> optional"}},
		{"a rename keeps the rules that name the field", `{type: object, x-kubernetes-validations: [{rule: "!has(self.minReady) || self.minReady <= self.replicas"}], properties: {replicas: {type: integer}, minReady: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "!has(self.minReady) || self.minReady <= self.size"}], properties: {size: {type: integer}, minReady: {type: integer}}}`,
			[]string{"B v1 spec.replicas -> spec.size: renamed"}},
		{"made required", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, required: [a], properties: {a: {type: integer}}}`,
			[]string{"B v1 spec.a: required optional -> required"}},
		{"no longer required", `{type: object, required: [a], properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer}}}`,
			[]string{"S v1 spec.a: required required -> optional"}},

		// Types.
		{"type changed", `{type: object, properties: {a: {type: integer, minimum: 1}}}`,
			`{type: object, properties: {a: {type: string}}}`,
			[]string{"B v1 spec.a: type integer -> string"}},
		{"integer to number widens", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: number}}}`,
			[]string{"S v1 spec.a: type integer -> number"}},
		{"integer to int-or-string widens", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {x-kubernetes-int-or-string: true}}}`,
			[]string{"S v1 spec.a: type integer -> int-or-string"}},
		{"int-or-string to integer narrows", `{type: object, properties: {a: {x-kubernetes-int-or-string: true}}}`,
			`{type: object, properties: {a: {type: integer}}}`,
			[]string{"B v1 spec.a: type int-or-string -> integer"}},
		{"nullable dropped", `{type: object, properties: {a: {type: string, nullable: true}}}`,
			`{type: object, properties: {a: {type: string}}}`,
			[]string{"B v1 spec.a: nullable true -> false"}},

		// Bounds.
		{"maximum narrowed", `{type: object, properties: {a: {type: integer, maximum: 100}}}`,
			`{type: object, properties: {a: {type: integer, maximum: 10}}}`,
			[]string{"B v1 spec.a: maximum <=100 -> <=10"}},
		{"maximum widened", `{type: object, properties: {a: {type: integer, maximum: 10}}}`,
			`{type: object, properties: {a: {type: integer, maximum: 100}}}`,
			[]string{"S v1 spec.a: maximum <=10 -> <=100"}},
		{"maximum made exclusive", `{type: object, properties: {a: {type: integer, maximum: 10}}}`,
			`{type: object, properties: {a: {type: integer, maximum: 10, exclusiveMaximum: true}}}`,
			[]string{"B v1 spec.a: maximum <=10 -> <10"}},
		{"minimum added", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer, minimum: 1}}}`,
			[]string{"B v1 spec.a: minimum none -> >=1"}},
		{"minimum removed", `{type: object, properties: {a: {type: integer, minimum: 1}}}`,
			`{type: object, properties: {a: {type: integer}}}`,
			[]string{"S v1 spec.a: minimum >=1 -> none"}},
		{"maxLength narrowed, minLength widened", `{type: object, properties: {a: {type: string, maxLength: 63, minLength: 2}}}`,
			`{type: object, properties: {a: {type: string, maxLength: 20, minLength: 1}}}`,
			[]string{"B v1 spec.a: maxLength <=63 -> <=20", "S v1 spec.a: minLength >=2 -> >=1"}},
		{"maxItems narrowed", `{type: object, properties: {l: {type: array, maxItems: 16, items: {type: string}}}}`,
			`{type: object, properties: {l: {type: array, maxItems: 8, items: {type: string}}}}`,
			[]string{"B v1 spec.l: maxItems <=16 -> <=8"}},

		// Values.
		{"pattern added", `{type: object, properties: {a: {type: string}}}`,
			`{type: object, properties: {a: {type: string, pattern: "^[a-z]+$"}}}`,
			[]string{`B v1 spec.a: pattern none -> "^[a-z]+$"`}},
		{"pattern changed", `{type: object, properties: {a: {type: string, pattern: "^[a-z]+$"}}}`,
			`{type: object, properties: {a: {type: string, pattern: "^[a-z0-9]+$"}}}`,
			[]string{`B v1 spec.a: pattern "^[a-z]+$" -> "^[a-z0-9]+$"`}},
		{"pattern removed", `{type: object, properties: {a: {type: string, pattern: "^[a-z]+$"}}}`,
			`{type: object, properties: {a: {type: string}}}`,
			[]string{`S v1 spec.a: pattern "^[a-z]+$" -> none`}},
		{"enum value added", `{type: object, properties: {a: {type: string, enum: [u, v]}}}`,
			`{type: object, properties: {a: {type: string, enum: [u, v, z]}}}`,
			[]string{`S v1 spec.a: enum values added none -> "z"`}},
		{"enum value removed", `{type: object, properties: {a: {type: string, enum: [u, v]}}}`,
			`{type: object, properties: {a: {type: string, enum: [u]}}}`,
			[]string{`B v1 spec.a: enum values removed "v" -> none`}},
		{"enum added", `{type: object, properties: {a: {type: string}}}`,
			`{type: object, properties: {a: {type: string, enum: [x]}}}`,
			[]string{`B v1 spec.a: enum none -> "x"`}},
		{"default changed", `{type: object, properties: {a: {type: string, default: "7.0"}}}`,
			`{type: object, properties: {a: {type: string, default: "7.2"}}}`,
			[]string{`B v1 spec.a: default "7.0" -> "7.2"`}},
		{"default removed: defaulted to optional", `{type: object, properties: {a: {type: integer, default: 3}}}`,
			`{type: object, properties: {a: {type: integer}}}`,
			[]string{`B v1 spec.a: default 3 -> none`}},
		{"default added: optional to defaulted", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer, default: 3}}}`,
			[]string{`B v1 spec.a: default none -> 3`}},
		{"a default written differently is the same", `{type: object, properties: {a: {type: number, default: 3}}}`,
			`{type: object, properties: {a: {type: number, default: 3.0}}}`,
			nil},
		{"description only", `{type: object, properties: {a: {type: integer, description: old}}}`,
			`{type: object, properties: {a: {type: integer, description: new}}}`,
			[]string{"S v1 spec.a: description"}},
		{"another keyword", `{type: object, properties: {a: {type: integer}}}`,
			`{type: object, properties: {a: {type: integer, multipleOf: 2}}}`,
			[]string{`B v1 spec.a: schema none -> {"multipleOf":2}`}},

		// Nested objects, lists, maps.
		{"nested field removed", `{type: object, properties: {a: {type: object, properties: {b: {type: object, properties: {c: {type: string}, d: {type: string}}}}}}}`,
			`{type: object, properties: {a: {type: object, properties: {b: {type: object, properties: {c: {type: string}}}}}}}`,
			[]string{"B v1 spec.a.b.d: removed"}},
		{"list element field type changed", `{type: object, properties: {l: {type: array, items: {type: object, properties: {port: {type: integer}}}}}}`,
			`{type: object, properties: {l: {type: array, items: {type: object, properties: {port: {type: string}}}}}}`,
			[]string{"B v1 spec.l[_].port: type integer -> string"}},
		{"list element field added", `{type: object, properties: {l: {type: array, items: {type: object, properties: {port: {type: integer}}}}}}`,
			`{type: object, properties: {l: {type: array, items: {type: object, properties: {port: {type: integer}, name: {type: string}}}}}}`,
			[]string{"S v1 spec.l[_].name: added none -> optional"}},
		{"map value narrowed", `{type: object, properties: {m: {type: object, additionalProperties: {type: integer, maximum: 10}}}}`,
			`{type: object, properties: {m: {type: object, additionalProperties: {type: integer, maximum: 5}}}}`,
			[]string{"B v1 spec.m[string]: maximum <=10 -> <=5"}},
		{"struct to map", `{type: object, properties: {m: {type: object, properties: {a: {type: string}}}}}`,
			`{type: object, properties: {m: {type: object, additionalProperties: {type: string}}}}`,
			[]string{"B v1 spec.m: shape struct -> map"}},
		{"unknown fields no longer kept", `{type: object, properties: {m: {type: object, x-kubernetes-preserve-unknown-fields: true}}}`,
			`{type: object, properties: {m: {type: object, properties: {a: {type: string}}}}}`,
			[]string{"B v1 spec.m: x-kubernetes-preserve-unknown-fields true -> false"}},

		// Disjunctions.
		{"anyOf alternative added", `{type: object, properties: {a: {type: integer, anyOf: [{minimum: 10}, {maximum: 1}]}}}`,
			`{type: object, properties: {a: {type: integer, anyOf: [{minimum: 10}, {maximum: 1}, {minimum: 5, maximum: 6}]}}}`,
			[]string{`S v1 spec.a: anyOf [{"minimum":10},{"maximum":1}] -> [{"minimum":10},{"maximum":1},{"maximum":6,"minimum":5}]`}},
		{"anyOf alternative removed", `{type: object, properties: {a: {type: integer, anyOf: [{minimum: 10}, {maximum: 1}]}}}`,
			`{type: object, properties: {a: {type: integer, anyOf: [{minimum: 10}]}}}`,
			[]string{`B v1 spec.a: anyOf [{"minimum":10},{"maximum":1}] -> [{"minimum":10}]`}},
		{"oneOf added", `{type: object, properties: {a: {type: object, properties: {git: {type: string}, image: {type: string}}}}}`,
			`{type: object, properties: {a: {type: object, oneOf: [{required: [git]}, {required: [image]}], properties: {git: {type: string}, image: {type: string}}}}}`,
			[]string{`B v1 spec.a: oneOf none -> [{"required":["git"]},{"required":["image"]}]`}},
		{"oneOf removed", `{type: object, properties: {a: {type: object, oneOf: [{required: [git]}, {required: [image]}], properties: {git: {type: string}, image: {type: string}}}}}`,
			`{type: object, properties: {a: {type: object, properties: {git: {type: string}, image: {type: string}}}}}`,
			[]string{`S v1 spec.a: oneOf [{"required":["git"]},{"required":["image"]}] -> none`}},
		{"a disjunction of structs gains an alternative", `{type: object, properties: {s: {type: object, x-kubernetes-validations: [{rule: "[has(self.git), has(self.image)].filter(m, m).size() == 1"}], properties: {git: {type: string}, image: {type: string}}}}}`,
			`{type: object, properties: {s: {type: object, x-kubernetes-validations: [{rule: "[has(self.git), has(self.image), has(self.oci)].filter(m, m).size() == 1"}], properties: {git: {type: string}, image: {type: string}, oci: {type: string}}}}}`,
			[]string{"B v1 spec.s: x-kubernetes-validations none -> [has(self.git), has(self.image), has(self.oci)].filter(m, m).size() == 1",
				"S v1 spec.s: x-kubernetes-validations [has(self.git), has(self.image)].filter(m, m).size() == 1 -> none",
				"S v1 spec.s.oci: added none -> optional"}},

		// CEL rules.
		{"new rule", `{type: object, properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "self.lo <= self.hi"}], properties: {lo: {type: integer}, hi: {type: integer}}}`,
			[]string{"B v1 spec: x-kubernetes-validations none -> self.lo <= self.hi"}},
		{"new rule guarded by a new field", `{type: object, properties: {replicas: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "!has(self.minReady) || self.minReady <= self.replicas"}], properties: {replicas: {type: integer}, minReady: {type: integer}}}`,
			[]string{"S v1 spec.minReady: added none -> optional", "S v1 spec: x-kubernetes-validations none -> !has(self.minReady) || self.minReady <= self.replicas"}},
		{"new rule guarded by an old field", `{type: object, properties: {replicas: {type: integer}, minReady: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "!has(self.minReady) || self.minReady <= self.replicas"}], properties: {replicas: {type: integer}, minReady: {type: integer}}}`,
			[]string{"B v1 spec: x-kubernetes-validations none -> !has(self.minReady) || self.minReady <= self.replicas"}},
		{"new transition rule", `{type: object, properties: {class: {type: string, default: standard}}}`,
			`{type: object, properties: {class: {type: string, default: standard, x-kubernetes-validations: [{rule: "self == oldSelf"}]}}}`,
			[]string{"S v1 spec.class: x-kubernetes-validations none -> self == oldSelf"}},
		{"rule removed", `{type: object, x-kubernetes-validations: [{rule: "self.lo <= self.hi"}], properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, properties: {lo: {type: integer}, hi: {type: integer}}}`,
			[]string{"S v1 spec: x-kubernetes-validations self.lo <= self.hi -> none"}},
		{"rule message changed", `{type: object, x-kubernetes-validations: [{rule: "self.lo <= self.hi", message: a}], properties: {lo: {type: integer}, hi: {type: integer}}}`,
			`{type: object, x-kubernetes-validations: [{rule: "self.lo <= self.hi", message: b}], properties: {lo: {type: integer}, hi: {type: integer}}}`,
			[]string{"S v1 spec: x-kubernetes-validations message a -> b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(schemacompat.Compare("v1", schema(t, root(tc.old)), schema(t, root(tc.next))))
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestCompareLeavesStatusOut(t *testing.T) {
	old := schema(t, `{type: object, properties: {status: {type: object, properties: {phase: {type: string}}}}}`)
	next := schema(t, `{type: object, properties: {status: {type: object, properties: {state: {type: integer}}}}}`)
	if got := schemacompat.Compare("v1", old, next); len(got) != 0 {
		t.Errorf("changes of status: %v", summary(got))
	}
}
