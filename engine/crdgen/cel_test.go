package crdgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// TestCELRules checks the constraints each shape of #Spec becomes: the
// rule, the node it sits on, or why it is left to render.
func TestCELRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // Constraint.String() without the position
	}{
		{"bound by a sibling, optional field",
			`#Spec: {replicas: *3 | int & >=1, minReady?: int & >=1 & <=replicas}`,
			[]string{"spec.minReady <= spec.replicas: CEL rule on spec: !has(self.minReady) || self.minReady <= self.replicas"}},
		{"nearest common parent",
			`#Spec: {a: {lo: int, hi: int & >lo}, b: {x: int & <=a.hi}}`,
			[]string{
				"spec.a.hi > spec.a.lo: CEL rule on spec.a: self.hi > self.lo",
				"spec.b.x <= spec.a.hi: CEL rule on spec: self.b.x <= self.a.hi",
			}},
		{"optional parents",
			`#Spec: {n: int, o?: {p?: {m?: int & <n}}}`,
			[]string{"spec.o.p.m < spec.n: CEL rule on spec: !(has(self.o) && has(self.o.p) && has(self.o.p.m)) || self.o.p.m < self.n"}},
		{"string inequality",
			`#Spec: {a: *"x" | string, b?: string & !=a}`,
			[]string{"spec.b != spec.a: CEL rule on spec: !has(self.b) || self.b != self.a"}},
		{"escaped names",
			"#Spec: {\n\tmax=\"max-size\": int\n\tif?: int & <=max\n}",
			[]string{`spec.if <= spec["max-size"]: CEL rule on spec: !has(self.__if__) || self.__if__ <= self.max__dash__size`}},
		{"defaulted fields in a struct default",
			`#Spec: {w: {lo: *0 | int, hi: *(5 & >lo) | int & >lo}}`,
			[]string{"spec.w.hi > spec.w.lo: CEL rule on spec.w: !has(self.hi) || self.hi > self.lo"}},
		{"default as an alternative of its own",
			`#Spec: {lo: *0 | int, hi: *5 | int & >lo}`,
			[]string{"spec.hi > spec.lo: CEL rule on spec: !has(self.hi) || self.hi == 5 || self.hi > self.lo"}},
		{"bound within a disjunction",
			`#Spec: {lo: int, hi?: 0 | int & >lo}`,
			[]string{"spec.hi >lo: render only: a bound by another field within a disjunction is not translated to CEL"}},
		{"unique items, bounded",
			"import (\"list\", \"strings\")\n#Spec: l?: [...string & strings.MaxRunes(10)] & list.UniqueItems() & list.MaxItems(20)",
			[]string{"spec.l & list.UniqueItems(): CEL rule on spec.l: self.all(x, self.exists_one(y, y == x))"}},
		{"unique items, unbounded",
			"import \"list\"\n#Spec: l?: [...string] & list.UniqueItems()",
			[]string{"spec.l & list.UniqueItems(): render only: the API server refuses the rule: estimated rule cost exceeds budget"}},
		{"immutable field",
			`#Spec: {class: *"standard" | string @cueop(immutable)}`,
			[]string{"spec.class @cueop(immutable): CEL rule on spec.class: self == oldSelf"}},
		{"immutable optional field",
			`#Spec: {class?: string @cueop(immutable)}`,
			[]string{"spec.class @cueop(immutable): CEL rule on spec: has(oldSelf.class) == has(self.class) && (!has(self.class) || self.class == oldSelf.class)"}},
		{"immutable within a list",
			`#Spec: {l?: [...{class: string @cueop(immutable)}]}`,
			[]string{"spec.l[_].class @cueop(immutable): render only: immutable fields within lists or maps are not supported"}},
		{"bound within a list",
			`#Spec: {l?: [...{a: int, b: int & >a}]}`,
			[]string{"spec.l[_].b > "}},
		{"bound within a list, from outside",
			`#Spec: {n: int, l?: [...int & <n]}`,
			[]string{"spec.l[_] < spec.n: render only: bounds by other fields within lists or maps are not translated to CEL"}},
		{"lengths bound by fields",
			"import (\"strings\", \"list\")\n#Spec: {maxLen: *5 | int, name?: string & strings.MaxRunes(maxLen), n: int, l: [...int] & list.MinItems(n)}",
			[]string{
				"len(spec.name) <= spec.maxLen: CEL rule on spec: !has(self.name) || size(self.name) <= self.maxLen",
				"len(spec.l) >= spec.n: CEL rule on spec: size(self.l) >= self.n",
			}},
		{"conditional fields",
			`#Spec: {
				exposure: *"ClusterIP" | "NodePort"
				if exposure == "NodePort" {nodePort!: int, label?: string}
				o?: {kind: *"a" | "b", if kind == "b" {b: int}}
			}`,
			[]string{
				`spec.nodePort required if and only if spec.exposure == "NodePort": CEL rule on spec: (has(self.exposure) && self.exposure == "NodePort") == has(self.nodePort)`,
				`spec.label only if spec.exposure == "NodePort": CEL rule on spec: (has(self.exposure) && self.exposure == "NodePort") || !has(self.label)`,
				`spec.o.b required if and only if spec.o.kind == "b": CEL rule on spec.o: (has(self.kind) && self.kind == "b") == has(self.b)`,
			}},
		{"one of two structs",
			`#Spec: {source: {git!: {url!: string}} | {image!: string, pull?: bool}}`,
			[]string{"spec.source one of { git!: { url!: string } } | { image!: string }: CEL rule on spec.source: " +
				"[has(self.git) && !has(self.image) && !has(self.pull), has(self.image) && !has(self.git)].filter(m, m).size() == 1"}},
		{"bound by a definition outside #Spec",
			"#Max: int\n#Spec: {n?: int & <#Max}",
			[]string{"spec.n < #Max: render only: the bound is not a field of #Spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd, rules, err := Explain(compileKind(t, tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(crd); err != nil {
				t.Fatalf("validate: %v\n%s", err, toYAML(t, specOf(crd)))
			}
			var got []string
			for _, r := range rules {
				r.Pos = noPos
				got = append(got, r.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("constraints:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("constraint %d:\n%s\nwant:\n%s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

var noPos = (&Constraint{}).Pos

// TestUnknownCueopAttribute: a misspelt @cueop attribute is an error that
// names the field and its position, not a silently mutable field.
func TestUnknownCueopAttribute(t *testing.T) {
	_, err := Generate(compileKind(t, "#Spec: {\n\tclass: string @cueop(immutible)\n}"))
	if err == nil || !strings.Contains(err.Error(), "#Spec.class (spec.cue:2:") || !strings.Contains(err.Error(), `unknown attribute argument "immutible"`) {
		t.Errorf("error %v, want #Spec.class (spec.cue:2:...) unknown attribute argument \"immutible\"", err)
	}
}

// TestCELMessages checks that the API server's error for a broken rule
// names the field and says what is wrong.
func TestCELMessages(t *testing.T) {
	src := `#Spec: {replicas: *3 | int & >=1, minReady?: int & >=1 & <=replicas}`
	s := newCRSchema(t, generateValid(t, src))
	_, err := s.admit(map[string]any{"replicas": int64(3), "minReady": int64(5)})
	if err == nil || !strings.Contains(err.Error(), "spec.minReady: Invalid value") ||
		!strings.Contains(err.Error(), "spec.minReady must be at most spec.replicas") {
		t.Errorf("error %v, want spec.minReady: Invalid value ... spec.minReady must be at most spec.replicas", err)
	}
}

// TestImmutable checks the rules of @cueop(immutable) with the API
// server's CEL validator: a change, a removal and an addition are refused
// on update; anything goes on create.
func TestImmutable(t *testing.T) {
	src := `#Spec: {
		class: *"standard" | string @cueop(immutable)
		zone?: string @cueop(immutable)
		size: *1 | int
	}`
	s := newCRSchema(t, generateValid(t, src))
	old, err := s.admit(map[string]any{"class": "fast", "zone": "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		spec string
		want string // "" for accepted
	}{
		{`{"class": "fast", "zone": "a", "size": 3}`, ""},
		{`{"class": "slow", "zone": "a"}`, "spec.class is immutable"},
		{`{"zone": "a"}`, "spec.class is immutable"}, // defaulted to standard
		{`{"class": "fast", "zone": "b"}`, "spec.zone is immutable"},
		{`{"class": "fast"}`, "spec.zone is immutable"},
	} {
		var spec map[string]any
		if err := json.Unmarshal([]byte(tt.spec), &spec); err != nil {
			t.Fatal(err)
		}
		_, err := s.admitUpdate(spec, old)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tt.spec, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.spec, err, tt.want)
		}
	}
	noZone, err := s.admit(map[string]any{"class": "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.admitUpdate(map[string]any{"class": "fast", "zone": "a"}, noZone); err == nil ||
		!strings.Contains(err.Error(), "spec.zone is immutable") {
		t.Errorf("setting an absent immutable field: %v, want spec.zone is immutable", err)
	}
}

// TestCELEquivalence generates specs around the bounds of each kind's
// schema and requires that the API server (defaulting, schema validation
// and CEL rules, evaluated with its own code) and CUE (the spec unified
// with #Spec, as render checks it) accept and refuse the same ones, for
// the shipped kinds and the shapes in testdata/shapes.cue.
func TestCELEquivalence(t *testing.T) {
	kinds := map[string]*template.Kind{}
	set := templatetest.Load(t, "../../templates")
	for _, k := range set.Kinds {
		kinds[k.Name] = k
	}
	src, err := os.ReadFile("testdata/shapes.cue")
	if err != nil {
		t.Fatal(err)
	}
	v := cuecontext.New().CompileBytes(src, cue.Filename("testdata/shapes.cue"))
	if v.Err() != nil {
		t.Fatal(v.Err())
	}
	kinds["shapes"] = testKind(v)
	specs := 600
	if raceEnabled {
		specs = 200
	}
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			crd, rules, err := Explain(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(crd); err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				if !r.Admission() {
					t.Errorf("left to render: %v", r)
				}
			}
			s := newCRSchema(t, crd)
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			accepted := 0
			fired := map[string]int{} // refusals by rule message
			for i := range specs {
				// Every other spec stays within the schema, so that what
				// refuses it is a rule or nothing.
				g := &specGen{r: r, within: i%2 == 0}
				spec := g.object(specOf(crd))
				js, _ := json.Marshal(spec)
				cueErr := k.Spec.Unify(k.Spec.Context().Encode(spec)).Validate(cue.Concrete(true))
				_, apiErr := s.admit(spec)
				if (cueErr == nil) != (apiErr == nil) {
					t.Errorf("spec %s: CUE says %v; API server says %v", js, cueErr, apiErr)
				}
				if apiErr == nil {
					accepted++
				}
				for _, r := range rules {
					if apiErr != nil && strings.Contains(apiErr.Error(), r.Message) {
						fired[r.Message]++
					}
				}
			}
			for _, r := range rules {
				// A transition rule (an immutable field) compares with the
				// stored object: a create never breaks it (TestImmutable checks it on updates).
				if fired[r.Message] == 0 && !strings.Contains(r.Rule, "oldSelf") {
					t.Errorf("no spec broke the rule of %s", r.What)
				}
			}
			// Both outcomes must be well represented for the test to mean
			// something.
			if accepted < specs/50 || accepted > specs-specs/20 {
				t.Errorf("%d of %d specs accepted: the generator does not explore both sides", accepted, specs)
			}
			t.Logf("%d of %d specs accepted; refusals by rule: %v", accepted, specs, fired)
		})
	}
}

// specGen generates values of a schema: each property absent now and
// then (required ones too), each value near the schema's bounds. Within
// the schema, required properties are there, numbers within their bounds,
// lists within their length, strings from their enum.
type specGen struct {
	r      *rand.Rand
	within bool
}

func (g *specGen) object(s apiextensionsv1.JSONSchemaProps) map[string]any {
	r := g.r
	out := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := s.Properties[n]
		absent := 0.5
		if g.within {
			absent = 0.85
		}
		if slices.Contains(s.Required, n) {
			absent = 0.02
			if g.within {
				absent = 0
			}
		}
		if r.Float64() < absent {
			continue
		}
		out[n] = g.value(p)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		for i := range r.IntN(3) {
			out[fmt.Sprintf("k%d", i)] = g.value(*s.AdditionalProperties.Schema)
		}
	}
	return out
}

func (g *specGen) value(s apiextensionsv1.JSONSchemaProps) any {
	r := g.r
	if len(s.Enum) > 0 && (g.within || r.IntN(8) > 0) {
		var v any
		_ = json.Unmarshal(s.Enum[r.IntN(len(s.Enum))].Raw, &v)
		return v
	}
	switch s.Type {
	case "integer", "number":
		// Mostly within the bounds, now and then one beyond.
		out := 0
		if r.IntN(10) == 0 && !g.within {
			out = 1
		}
		lo, hi := int64(-1), int64(12)
		if s.Minimum != nil {
			lo = int64(*s.Minimum) - int64(out)
		}
		if s.Maximum != nil {
			hi = int64(*s.Maximum) + int64(out)
		}
		if hi-lo > 20 { // a wide range: stay near a bound
			if r.IntN(2) == 0 {
				hi = lo + 12
			} else {
				lo = hi - 12
			}
		}
		return lo + r.Int64N(hi-lo+1)
	case "string":
		if r.IntN(4) == 0 && !g.within {
			return []string{"7.0", "6.2.1", "abc", "", "X!"}[r.IntN(5)]
		}
		return []string{"x", "y", "z"}[r.IntN(3)]
	case "boolean":
		return r.IntN(2) == 0
	case "array":
		n := r.IntN(4)
		if s.MaxItems != nil {
			n = r.IntN(int(*s.MaxItems) + 1)
			if r.IntN(10) == 0 && !g.within {
				n++
			}
		}
		l := make([]any, n)
		for i := range l {
			l[i] = g.value(*s.Items.Schema)
		}
		return l
	case "object":
		return g.object(s)
	}
	return nil
}
