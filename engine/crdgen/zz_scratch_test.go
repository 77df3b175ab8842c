package crdgen

import (
	"fmt"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func dump(v cue.Value, depth int) string {
	if depth > 6 {
		return "..."
	}
	op, args := v.Expr()
	d, ok := v.Default()
	s := fmt.Sprintf("{op=%v kind=%v ik=%v conc=%v def=%v:%v val=%v", op, v.Kind(), v.IncompleteKind(), v.IsConcrete(), ok, d, v)
	if op == cue.SelectorOp || op == cue.NoOp {
		r, p := v.ReferencePath()
		s += fmt.Sprintf(" ref=%v:%v", r.Exists(), p)
	}
	if op == cue.SelectorOp {
		s += " SEL"
	} else if op != cue.NoOp || (len(args) == 1 && fmt.Sprint(args[0]) != fmt.Sprint(v)) {
		var parts []string
		for _, a := range args {
			parts = append(parts, dump(a, depth+1))
		}
		s += " args=[" + strings.Join(parts, ", ") + "]"
	} else if len(args) != 1 {
		s += fmt.Sprintf(" nargs=%d", len(args))
	}
	return s + "}"
}

func TestScratch(t *testing.T) {
	src := `
import "strings"
#R: int & >=1
#E: "a" | "b"
#Spec: {
	a: *3 | int & >=1
	b: int & >=1 & <=10
	c: #R & <=10
	d: *3 | #R
	e: *"a" | "b" | "c"
	f: null | string
	g: int | string
	h: =~"^a" & strings.MinRunes(2)
	i: *["a"] | [...string]
	j: [...int]
	k: [string]: int
	l: {...}
	m: _
	n: #E
	o: *"b" | #E
	p: int32
	q: >0 & <100
	r: "x"
	s: {x: int, y?: string, z!: bool}
	t: {[=~"^a"]: int}
	u: float
	v: number & >=0.5
	w: uint8
	x: *null | int
	y: strings.MaxRunes(5)
	z: !="x"
}
`
	v := cuecontext.New().CompileString(src)
	if v.Err() != nil {
		t.Fatal(v.Err())
	}
	spec := v.LookupPath(cue.ParsePath("#Spec"))
	it, _ := spec.Fields(cue.Optional(true))
	for it.Next() {
		t.Logf("%s: %s", it.Selector(), dump(it.Value(), 0))
	}
	for _, f := range []string{"k", "l", "t", "s"} {
		fv := spec.LookupPath(cue.ParsePath(f))
		as := fv.LookupPath(cue.MakePath(cue.AnyString))
		t.Logf("%s: closed=%v anystring=%v %v allows=%v", f, fv.IsClosed(), as.Exists(), as, fv.Allows(cue.Str("zzz")))
		it, _ := fv.Fields(cue.Optional(true), cue.Patterns(true))
		for it.Next() {
			sel := it.Selector()
			t.Logf("   sel %v ct=%v", sel, sel.ConstraintType())
			if sel.ConstraintType() == cue.PatternConstraint {
				t.Logf("   pattern %v", sel.Pattern())
			}
		}
	}
	for _, f := range []string{"i", "j"} {
		fv := spec.LookupPath(cue.ParsePath(f))
		as := fv.LookupPath(cue.MakePath(cue.AnyIndex))
		t.Logf("%s: anyindex=%v %v", f, as.Exists(), as)
	}
}
