package crdgen

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// FuzzSchema builds #Spec (and sometimes #Status) schemas from the fuzz
// input with a small grammar of fields, types, bounds, defaults, enums,
// patterns, lists, maps and disjunctions. Whatever compiles must either be
// refused by Generate or give a CRD that the API server's validation
// accepts, that Generate reproduces exactly, and whose defaults, applied
// by the API server to a resource without a spec, satisfy #Spec.
func FuzzSchema(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {0, 6, 1}, {2, 0, 2, 1, 3}, {3, 4, 8, 1}, {1, 7, 2, 1, 0, 9, 1, 12},
		{4, 0, 12, 3, 1, 2, 5, 13, 2}, {2, 1, 19, 0, 0, 15, 5, 7}, {5, 3, 17, 4, 1, 6, 2, 9, 3, 10, 11},
		{3, 2, 18, 0, 1, 14, 2, 16, 1, 22, 255, 200, 100, 50},
		[]byte("replicas: *3 | int & >=1, version: *\"7.0\" | string"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := newGen(data).source()
		v := cuecontext.New().CompileString(src, cue.Filename("spec.cue"))
		if v.Err() != nil {
			return
		}
		k := testKind(v)
		crd, err := Generate(k)
		if err != nil {
			return
		}
		if err := Validate(crd); err != nil {
			t.Fatalf("invalid CRD for\n%s\nerror: %v\n%s", src, err, toYAML(t, specOf(crd)))
		}
		again, err := Generate(k)
		if err != nil || toYAML(t, again) != toYAML(t, crd) {
			t.Fatalf("Generate is not deterministic for\n%s", src)
		}
		if specOf(crd).Default != nil {
			checkDefaultedSpec(t, src, k.Spec, newCRSchema(t, crd))
		}
	})
}

// checkDefaultedSpec admits a resource without a spec and requires that
// the API server accepts it and that CUE accepts the defaulted spec.
func checkDefaultedSpec(t *testing.T, src string, spec cue.Value, s *crSchema) {
	obj, err := s.admit(nil)
	if err != nil {
		t.Fatalf("defaulted resource refused for\n%s\nerror: %v", src, err)
	}
	got := obj["spec"]
	if err := spec.Unify(spec.Context().Encode(got)).Validate(cue.Concrete(true)); err != nil {
		t.Fatalf("defaulted spec %v does not satisfy #Spec for\n%s\nerror: %v", got, src, err)
	}
}

// gen turns fuzz bytes into CUE source. An exhausted input reads as zeros,
// which choose the simplest productions, so generation always ends.
type gen struct {
	data    []byte
	pos     int
	imports []string
	defs    []string
}

func newGen(data []byte) *gen { return &gen{data: data} }

func (g *gen) pick(n int) int {
	if g.pos >= len(g.data) {
		return 0
	}
	c := g.data[g.pos]
	g.pos++
	return int(c) % n
}

func (g *gen) use(pkg string) {
	if !slices.Contains(g.imports, pkg) {
		g.imports = append(g.imports, pkg)
	}
}

func (g *gen) source() string {
	spec := g.structLit(0)
	status := ""
	if g.pick(2) == 1 {
		status = "#Status: " + g.structLit(1) + "\n"
	}
	var b strings.Builder
	for _, p := range g.imports {
		fmt.Fprintf(&b, "import %q\n", p)
	}
	for _, d := range g.defs {
		b.WriteString(d + "\n")
	}
	b.WriteString("#Spec: " + spec + "\n" + status)
	return b.String()
}

var (
	fieldNames = []string{"a", "b", "replicas", "name", "mode", "tags", "port", `"x-y"`}
	markers    = []string{"", "?", "!", ""}
	patterns   = []string{`^[a-z]+$`, `^a`, `b$`, `^[0-9]+%$`, `[`}
	strLits    = []string{`"a"`, `"b"`, `"auto"`, `"7.0"`, `""`}
)

func (g *gen) structLit(depth int) string {
	n := 1 + g.pick(4)
	fields := make([]string, 0, n)
	for range n {
		doc := ""
		if g.pick(4) == 3 {
			doc = "// doc\n"
		}
		fields = append(fields, doc+fieldNames[g.pick(len(fieldNames))]+markers[g.pick(len(markers))]+": "+g.value(depth))
	}
	return "{\n" + strings.Join(fields, "\n") + "\n}"
}

// maxGenDepth bounds the nesting of generated values: CUE's Expr costs
// grow with the square of the nesting, and real schemas nest a few levels.
const maxGenDepth = 4

func (g *gen) value(depth int) string {
	if depth > maxGenDepth {
		return g.scalar(g.pick(7))
	}
	switch c := g.pick(20); c {
	case 0, 1, 2, 3, 4, 5, 14:
		return g.scalar(c)
	case 6:
		return "*" + g.literal() + " | " + g.scalar(g.pick(6))
	case 7, 8, 9:
		return g.composite(c, depth)
	case 10:
		return "_"
	case 11:
		return "{...}"
	case 12:
		return "int" + g.bounds() + " | string" + g.stringConstraints()
	case 13:
		return "null | (" + g.value(depth+1) + ")"
	case 15:
		return fmt.Sprintf("> %d | < %d", g.number(), g.number())
	case 16:
		return []string{`string & !="a"`, `string & !~"^x"`, `int & !=0`}[g.pick(3)]
	case 17:
		return "*(" + g.value(depth+1) + ") | (" + g.value(depth+1) + ")"
	case 18:
		return "(" + g.value(depth+1) + ") & (" + g.value(depth+1) + ")"
	}
	i := len(g.defs)
	name := fmt.Sprintf("#D%d", i)
	g.defs = append(g.defs, "") // reserve the name before recursing
	g.defs[i] = name + ": " + g.value(depth+1)
	return name
}

func (g *gen) scalar(c int) string {
	switch c {
	case 0:
		return "int" + g.bounds()
	case 1:
		return "number" + g.bounds()
	case 2:
		return "string" + g.stringConstraints()
	case 3:
		return "bool"
	case 4:
		return g.enum(func() string { return strLits[g.pick(len(strLits))] })
	case 5:
		return g.enum(func() string { return fmt.Sprint(g.number()) })
	}
	return []string{"int32", "uint8", "int64", "uint", "float64"}[g.pick(5)]
}

func (g *gen) composite(c, depth int) string {
	switch c {
	case 7:
		return g.structLit(depth + 1)
	case 8:
		list := "[...(" + g.value(depth+1) + ")]"
		if g.pick(3) == 2 {
			g.use("list")
			list += fmt.Sprintf(" & list.MinItems(%d)", g.pick(3))
		}
		return list
	}
	return "{[string]: " + g.value(depth+1) + "}"
}

func (g *gen) enum(lit func() string) string {
	n := 1 + g.pick(4)
	alts := make([]string, n)
	for i := range alts {
		alts[i] = lit()
	}
	if d := g.pick(n + 1); d < n {
		alts[d] = "*" + alts[d]
	}
	return strings.Join(alts, " | ")
}

func (g *gen) literal() string {
	switch g.pick(4) {
	case 0:
		return fmt.Sprint(g.number())
	case 1:
		return strLits[g.pick(len(strLits))]
	case 2:
		return []string{"true", "false"}[g.pick(2)]
	}
	return fmt.Sprintf("%d.5", g.number())
}

func (g *gen) number() int { return g.pick(21) - 10 }

func (g *gen) bounds() string {
	var b strings.Builder
	for range g.pick(3) {
		fmt.Fprintf(&b, " & %s %d", []string{">=", ">", "<=", "<"}[g.pick(4)], g.number())
	}
	return b.String()
}

func (g *gen) stringConstraints() string {
	var b strings.Builder
	for range g.pick(3) {
		switch g.pick(3) {
		case 0:
			fmt.Fprintf(&b, " & =~%q", patterns[g.pick(len(patterns))])
		case 1:
			g.use("strings")
			fmt.Fprintf(&b, " & strings.MinRunes(%d)", g.pick(4))
		case 2:
			g.use("strings")
			fmt.Fprintf(&b, " & strings.MaxRunes(%d)", g.pick(8))
		}
	}
	return b.String()
}
