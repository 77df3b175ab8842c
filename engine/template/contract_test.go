package template

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// TestConstrainedBy checks when a template's field is known to be unified
// with a definition already; every doubtful case must say false, so that
// the engine unifies.
func TestConstrainedBy(t *testing.T) {
	const defs = "#Spec: {a: *1 | int}\n#Status: {n: int}\n"
	for _, tc := range []struct {
		name, src, path, def string
		want                 bool
	}{
		{"reference", "parent: spec: #Spec", "parent.spec", "#Spec", true},
		{"conjunction", "status: #Status & {n: 1}", "status", "#Status", true},
		{"conjunction, right operand", "status: {n: 1} & #Status", "status", "#Status", true},
		{"plain struct", "parent: spec: {a: int}", "parent.spec", "#Spec", false},
		{"two declarations", "parent: spec: #Spec\nparent: spec: a: 2", "parent.spec", "#Spec", false},
		{"embedding", "parent: spec: {#Spec, a: 2}", "parent.spec", "#Spec", false},
		{"disjunction", "parent: spec: #Spec | {b: 1}", "parent.spec", "#Spec", false},
		{"shadowed", "parent: {#Spec: {b: int}, spec: #Spec}", "parent.spec", "#Spec", false},
		{"other definition", "#Other: {a: int}\nparent: spec: #Other", "parent.spec", "#Spec", false},
		{"alias of the definition", "#Alias: #Spec\nparent: spec: #Alias", "parent.spec", "#Spec", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := cuecontext.New().CompileString(defs + tc.src)
			if err := v.Err(); err != nil {
				t.Fatal(err)
			}
			def := cue.ParsePath(tc.def)
			if got := constrainedBy(v, v.LookupPath(cue.ParsePath(tc.path)), def); got != tc.want {
				t.Errorf("constrainedBy(%s, %s) = %v, want %v", tc.path, tc.def, got, tc.want)
			}
		})
	}
}
