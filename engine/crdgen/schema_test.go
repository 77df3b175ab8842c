package crdgen

import (
	"errors"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
)

// TestSchema checks the schema of one field of #Spec (or of the whole spec
// when field is empty) for every construct the walker supports, and that
// the CRD around it passes the API server's validation.
func TestSchema(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		field string
		want  string
	}{{
		name:  "default and minimum",
		src:   `#Spec: replicas: *3 | int & >=1`,
		field: "replicas",
		want:  "{type: integer, default: 3, minimum: 1}",
	}, {
		name:  "bounds from int and a conjunction",
		src:   `#Spec: n: int & >=1 & <=10`,
		field: "n",
		want:  "{type: integer, minimum: 1, maximum: 10}",
	}, {
		name:  "a bound by another field is left to a CEL rule",
		src:   `#Spec: {replicas: *3 | int & >=1, minReady?: int & >=1 & <=replicas}`,
		field: "minReady",
		want:  "{type: integer, minimum: 1}",
	}, {
		name:  "exclusive bounds",
		src:   `#Spec: ratio: >0 & <100`,
		field: "ratio",
		want:  "{type: number, minimum: 0, exclusiveMinimum: true, maximum: 100, exclusiveMaximum: true}",
	}, {
		name:  "tighter bound wins",
		src:   `#Spec: n: int & >=1 & >3 & <=10 & <10`,
		field: "n",
		want:  "{type: integer, minimum: 3, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true}",
	}, {
		name:  "bound through a definition",
		src:   "#Min: 2\n#R: int & >=#Min\n#Spec: n: #R & <=10",
		field: "n",
		want:  "{type: integer, minimum: 2, maximum: 10}",
	}, {
		name:  "bound through a let clause",
		src:   "let R = int & >=1\n#Spec: n: R",
		field: "n",
		want:  "{type: integer, minimum: 1}",
	}, {
		name: "number and float",
		src:  `#Spec: {a: number & >=0.5, b: float}`,
		want: "{type: object, required: [a, b], properties: {a: {type: number, minimum: 0.5}, b: {type: number}}}",
	}, {
		name: "int32 and uint8",
		src:  `#Spec: {a?: int32, b?: uint8, c?: int64}`,
		want: `{type: object, default: {}, properties: {
			a: {type: integer, format: int32, minimum: -2147483648, maximum: 2147483647},
			b: {type: integer, minimum: 0, maximum: 255},
			c: {type: integer, format: int64}}}`,
	}, {
		name: "bounds beyond int64 are dropped",
		src:  `#Spec: {a?: uint64, b?: float64, c?: int & <=9223372036854775807 & >=0}`,
		want: `{type: object, default: {}, properties: {
			a: {type: integer, minimum: 0}, b: {type: number}, c: {type: integer, minimum: 0}}}`,
	}, {
		name:  "string default",
		src:   `#Spec: version: *"7.0" | string`,
		field: "version",
		want:  `{type: string, default: "7.0"}`,
	}, {
		name: "bool and bytes",
		src:  `#Spec: {a: *true | bool, b?: bytes}`,
		want: "{type: object, default: {}, properties: {a: {type: boolean, default: true}, b: {type: string, format: byte}}}",
	}, {
		name:  "enum",
		src:   `#Spec: mode: "a" | "b" | "c"`,
		field: "mode",
		want:  "{type: string, enum: [a, b, c]}",
	}, {
		name:  "enum with default",
		src:   `#Spec: mode: *"b" | "a" | "c"`,
		field: "mode",
		want:  "{type: string, enum: [b, a, c], default: b}",
	}, {
		name:  "enum through a definition",
		src:   "#Mode: \"a\" | \"b\"\n#Spec: mode: *\"c\" | #Mode",
		field: "mode",
		want:  "{type: string, enum: [c, a, b], default: c}",
	}, {
		name:  "integer enum",
		src:   `#Spec: n: *1 | 2 | 3`,
		field: "n",
		want:  "{type: integer, enum: [1, 2, 3], default: 1}",
	}, {
		name:  "literal subsumed by its type",
		src:   `#Spec: s: "a" | string`,
		field: "s",
		want:  "{type: string}",
	}, {
		name:  "concrete value",
		src:   `#Spec: api: "v1"`,
		field: "api",
		want:  "{type: string, enum: [v1], default: v1}",
	}, {
		name:  "pattern and lengths",
		src:   "import \"strings\"\n#Spec: name: =~\"^[a-z]+$\" & strings.MinRunes(2) & strings.MaxRunes(10)",
		field: "name",
		want:  `{type: string, pattern: "^[a-z]+$", minLength: 2, maxLength: 10}`,
	}, {
		name:  "two patterns",
		src:   `#Spec: name: =~"^a" & =~"b$"`,
		field: "name",
		want:  `{type: string, pattern: "^a", allOf: [{pattern: "b$"}]}`,
	}, {
		name:  "negated pattern and value",
		src:   `#Spec: name: string & !~"^x" & !="bad"`,
		field: "name",
		want:  `{type: string, allOf: [{not: {pattern: "^x"}}, {not: {enum: [bad]}}]}`,
	}, {
		name:  "alternatives of one type",
		src:   `#Spec: n: >5 | <1`,
		field: "n",
		want:  "{type: number, anyOf: [{minimum: 5, exclusiveMinimum: true}, {maximum: 1, exclusiveMaximum: true}]}",
	}, {
		name:  "enum or pattern",
		src:   `#Spec: s: *"a" | "b" | =~"^x-"`,
		field: "s",
		want:  `{type: string, default: a, anyOf: [{enum: [a, b]}, {pattern: "^x-"}]}`,
	}, {
		name:  "date-time",
		src:   "import \"time\"\n#Spec: at?: time.Time",
		field: "at",
		want:  "{type: string, format: date-time}",
	}, {
		name:  "description",
		src:   "#Spec: {\n\t// replicas is the number of pods.\n\t//\n\t// At least one.\n\treplicas: *3 | int\n}",
		field: "replicas",
		want:  "{type: integer, default: 3, description: \"replicas is the number of pods.\\n\\nAt least one.\"}",
	}, {
		name: "spec description",
		src:  "// Spec is the desired state.\n#Spec: {a?: int}",
		want: "{type: object, default: {}, description: Spec is the desired state., properties: {a: {type: integer}}}",
	}, {
		name: "required and optional",
		src:  `#Spec: {regular: int, optional?: int, required!: int, requiredDefault!: *1 | int, defaulted: *1 | int, fixed: 2, list: [...int]}`,
		want: `{type: object, required: [regular, required, requiredDefault], properties: {
			regular: {type: integer}, optional: {type: integer}, required: {type: integer}, requiredDefault: {type: integer},
			defaulted: {type: integer, default: 1}, fixed: {type: integer, enum: [2], default: 2},
			list: {type: array, items: {type: integer}}}}`,
	}, {
		name:  "optional field keeps no default",
		src:   `#Spec: n?: *3 | int`,
		field: "n",
		want:  "{type: integer}",
	}, {
		name:  "nested struct with defaults defaults to {}",
		src:   `#Spec: {nested: {a: *1 | int, b?: string, c: {d: *"x" | string}}}`,
		field: "nested",
		want: `{type: object, default: {}, properties: {
			a: {type: integer, default: 1}, b: {type: string},
			c: {type: object, default: {}, properties: {d: {type: string, default: x}}}}}`,
	}, {
		name: "nested struct with a required field is required",
		src:  `#Spec: {nested: {a: int}}`,
		want: "{type: object, required: [nested], properties: {nested: {type: object, required: [a], properties: {a: {type: integer}}}}}",
	}, {
		name:  "struct default",
		src:   `#Spec: s: *{x: 1} | {x: int}`,
		field: "s",
		want:  "{type: object, default: {x: 1}, required: [x], properties: {x: {type: integer}}}",
	}, {
		name:  "embedded definition",
		src:   "#Base: {a: *1 | int}\n#Spec: s: {#Base, b?: string}",
		field: "s",
		want:  "{type: object, default: {}, properties: {a: {type: integer, default: 1}, b: {type: string}}}",
	}, {
		name:  "map",
		src:   `#Spec: labels?: [string]: string`,
		field: "labels",
		want:  "{type: object, additionalProperties: {type: string}}",
	}, {
		name:  "map of structs",
		src:   `#Spec: ports?: [Name=string]: {name: Name, port: int & >0}`,
		field: "ports",
		want: `{type: object, additionalProperties: {type: object, required: [name, port], properties: {
			name: {type: string}, port: {type: integer, minimum: 0, exclusiveMinimum: true}}}}`,
	}, {
		name:  "list",
		src:   `#Spec: tags?: [...string]`,
		field: "tags",
		want:  "{type: array, items: {type: string}}",
	}, {
		name:  "list of structs",
		src:   `#Spec: items?: [...{name!: string, weight: *1 | int}]`,
		field: "items",
		want: `{type: array, items: {type: object, required: [name], properties: {
			name: {type: string}, weight: {type: integer, default: 1}}}}`,
	}, {
		name:  "list bounds",
		src:   "import \"list\"\n#Spec: tags: [...string] & list.MinItems(1) & list.MaxItems(3)",
		field: "tags",
		want:  "{type: array, items: {type: string}, minItems: 1, maxItems: 3}",
	}, {
		name:  "map bounds",
		src:   "import \"struct\"\n#Spec: env: {[string]: string} & struct.MinFields(1) & struct.MaxFields(8)",
		field: "env",
		want:  "{type: object, additionalProperties: {type: string}, minProperties: 1, maxProperties: 8}",
	}, {
		name:  "list default",
		src:   `#Spec: tags: *["a", "b"] | [...string]`,
		field: "tags",
		want:  "{type: array, items: {type: string}, default: [a, b]}",
	}, {
		name:  "any value",
		src:   `#Spec: config?: _`,
		field: "config",
		want:  "{x-kubernetes-preserve-unknown-fields: true}",
	}, {
		name:  "open struct",
		src:   `#Spec: extra?: {...}`,
		field: "extra",
		want:  "{type: object, x-kubernetes-preserve-unknown-fields: true}",
	}, {
		name: "open spec",
		src:  `#Spec: {a?: int, ...}`,
		want: "{type: object, default: {}, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}",
	}, {
		name:  "open struct with fields",
		src:   `#Spec: extra?: {a?: int, ...}`,
		field: "extra",
		want:  "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}}}",
	}, {
		name:  "map of anything",
		src:   `#Spec: extra?: [string]: _`,
		field: "extra",
		want:  "{type: object, x-kubernetes-preserve-unknown-fields: true}",
	}, {
		name:  "int or string",
		src:   `#Spec: port?: int | string`,
		field: "port",
		want:  "{x-kubernetes-int-or-string: true}",
	}, {
		name:  "int or string with constraints",
		src:   `#Spec: port?: int & >=0 & <=65535 | =~"^[a-z]+$"`,
		field: "port",
		want:  `{x-kubernetes-int-or-string: true, minimum: 0, maximum: 65535, pattern: "^[a-z]+$"}`,
	}, {
		name:  "int or string literal",
		src:   `#Spec: replicas: int | *"auto"`,
		field: "replicas",
		want:  `{x-kubernetes-int-or-string: true, pattern: "^(?:auto)$", default: auto}`,
	}, {
		name:  "mixed literals",
		src:   `#Spec: v: 1 | "one"`,
		field: "v",
		want:  `{x-kubernetes-int-or-string: true, enum: [1, one]}`,
	}, {
		name:  "nullable",
		src:   `#Spec: n?: null | string`,
		field: "n",
		want:  "{type: string, nullable: true}",
	}, {
		name:  "nullable struct with null default",
		src:   `#Spec: s: *null | {a: int}`,
		field: "s",
		want:  "{type: object, nullable: true, required: [a], properties: {a: {type: integer}}}",
	}, {
		name:  "nullable through a definition",
		src:   "#S: null | {a?: int}\n#Spec: s?: #S",
		field: "s",
		want:  "{type: object, nullable: true, properties: {a: {type: integer}}}",
	}, {
		name: "quoted names, hidden fields and definitions",
		src:  `#Spec: {"foo-bar"?: int, _hidden: int, #Def: int}`,
		want: `{type: object, default: {}, properties: {"foo-bar": {type: integer}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := specOf(generateValid(t, tt.src))
			if tt.field != "" {
				p, ok := spec.Properties[tt.field]
				if !ok {
					t.Fatalf("no field %s in %s", tt.field, toYAML(t, spec))
				}
				spec = p
			}
			assertSchema(t, spec, tt.want)
		})
	}
}

// TestSchemaErrors checks that constructs a structural schema cannot
// express are refused with an error that names the field and the CUE
// position.
func TestSchemaErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings of the error
	}{{
		name: "tuple",
		src:  "#Spec: {\n\tpair: [int, string]\n}",
		want: []string{"#Spec.pair (spec.cue:2:2)", "fixed elements", "use [...T]"},
	}, {
		name: "prefix and rest",
		src:  "#Spec: {\n\tl?: [int, ...string]\n}",
		want: []string{"#Spec.l (spec.cue:2:2)", "fixed elements"},
	}, {
		name: "pattern constraint on some names",
		src:  "#Spec: {\n\tm?: {[=~\"^a\"]: int}\n}",
		want: []string{"#Spec.m (spec.cue:2:", "pattern constraint [=~\"^a\"]"},
	}, {
		name: "fields and a map",
		src:  "#Spec: {\n\tm?: {a?: int, [string]: int}\n}",
		want: []string{"#Spec.m (spec.cue:2:2)", "both fields and [string]: T"},
	}, {
		name: "mixed types",
		src:  "#Spec: {\n\tv?: int | bool\n}",
		want: []string{"#Spec.v (spec.cue:2:2)", "int | bool can be bool | int", "one type"},
	}, {
		name: "disjunction of structs whose fields differ",
		src:  "#Spec: {\n\tv?: {a: int} | {a: string}\n}",
		want: []string{"#Spec.v (spec.cue:2:", "field a differs between alternatives"},
	}, {
		name: "arithmetic",
		src:  "#Spec: {\n\ta: int\n\tb: a + 1\n}",
		want: []string{"#Spec.b (spec.cue:3:2)", "non-concrete value int in operand to +"},
	}, {
		name: "interpolation",
		src:  "#Spec: {\n\ta: int\n\tb: \"x\\(a)\"\n}",
		want: []string{"#Spec.b (spec.cue:3:2)", "invalid interpolation"},
	}, {
		name: "unknown validator",
		src:  "import \"net\"\n#Spec: {\n\tip?: string & net.IPv4\n}",
		want: []string{"#Spec.ip (spec.cue:3:", "validator net.IPv4"},
	}, {
		name: "number literals with int or string",
		src:  "#Spec: {\n\tv?: 1 | 2 | string\n}",
		want: []string{"#Spec.v (spec.cue:2:", "int | string"},
	}, {
		name: "string bound",
		src:  "#Spec: {\n\ts?: string & >=\"a\"\n}",
		want: []string{"#Spec.s (spec.cue:2:", "concrete number"},
	}, {
		name: "only null",
		src:  "#Spec: {\n\tn?: null\n}",
		want: []string{"#Spec.n (spec.cue:2:2)", "only be null"},
	}, {
		name: "recursive definition",
		src:  "#T: {next?: #T}\n#Spec: {\n\tlist?: #T\n}",
		want: []string{"#Spec.list.next (spec.cue:1:6)", "structural cycle"},
	}, {
		name: "deep nesting",
		src:  "#Spec: " + strings.Repeat("{a: ", 70) + "int" + strings.Repeat("}", 70),
		want: []string{"#Spec.a.a.a.a", "nested more than 64 levels"},
	}, {
		name: "deep expression",
		src:  "#Spec: s?: " + strings.Repeat("null | (", 150) + "string" + strings.Repeat(")", 150),
		want: []string{"#Spec.s (spec.cue:1:", "expression nested more than 100 levels deep"},
	}, {
		name: "nested field",
		src:  "#Spec: {\n\ta: {\n\t\tb: {\n\t\t\tc?: [int, int]\n\t\t}\n\t}\n}",
		want: []string{"#Spec.a.b.c (spec.cue:4:4)"},
	}, {
		name: "invalid value",
		src:  "#Spec: {\n\ta?: int & \"x\"\n}",
		want: []string{"#Spec.a (spec.cue:2:", "invalid value"},
	}, {
		name: "list element",
		src:  "#Spec: {\n\tl?: [...(int | bool)]\n}",
		want: []string{"#Spec.l[_] (spec.cue:2:"},
	}, {
		name: "map value",
		src:  "#Spec: {\n\tm?: [string]: [int, int]\n}",
		want: []string{"#Spec.m[string] (spec.cue:2:"},
	}, {
		name: "spec not a struct",
		src:  "#Spec: int",
		want: []string{"#Spec (spec.cue:1:1)", "must be a struct"},
	}, {
		name: "reserved status field",
		src:  "#Spec: {}\n#Status: {\n\tconditions?: [...string]\n}",
		want: []string{"#Status.conditions (spec.cue:3:2)", "written by the engine"},
	}, {
		name: "status error",
		src:  "#Spec: {}\n#Status: {\n\tpair: [int, int]\n}",
		want: []string{"#Status.pair (spec.cue:3:2)"},
	}, {
		name: "no spec",
		src:  "#Status: {}",
		want: []string{"#Spec: not defined"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd, err := Generate(compileKind(t, tt.src))
			if err == nil {
				t.Fatalf("no error; crd:\n%s", toYAML(t, crd))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "kind widget: crd widgets.example.com: ") {
				t.Errorf("error %q does not name its subject first", err)
			}
		})
	}
}

// TestSchemaErrorPositions checks that a SchemaError works with the CUE
// errors package.
func TestSchemaErrorPositions(t *testing.T) {
	_, err := Generate(compileKind(t, "#Spec: {\n\tpair: [int, string]\n}"))
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SchemaError", err)
	}
	if se.Field != "#Spec.pair" || se.Pos.String() != "spec.cue:2:2" {
		t.Errorf("field %q at %s, want #Spec.pair at spec.cue:2:2", se.Field, se.Pos)
	}
	if pos := cueerrors.Positions(err); len(pos) != 1 || pos[0].String() != "spec.cue:2:2" {
		t.Errorf("positions %v, want [spec.cue:2:2]", pos)
	}
	if d := cueerrors.Details(err, nil); !strings.Contains(d, "#Spec.pair: list") || !strings.Contains(d, "spec.cue:2:2") {
		t.Errorf("details %q lack the path or the position", d)
	}
}

// TestSchemaValue checks Schema on its own, on a value that is not a
// definition.
func TestSchemaValue(t *testing.T) {
	v := cuecontext.New().CompileString("x: {a: *1 | int, b?: string}", cue.Filename("x.cue"))
	s, err := Schema(v.LookupPath(cue.ParsePath("x")))
	if err != nil {
		t.Fatal(err)
	}
	assertSchema(t, *s, "{type: object, default: {}, properties: {a: {type: integer, default: 1}, b: {type: string}}}")
	_, err = Schema(v.LookupPath(cue.ParsePath("nope")))
	if err == nil || !strings.Contains(err.Error(), "invalid value") {
		t.Errorf("Schema of a missing value: got %v", err)
	}
}
