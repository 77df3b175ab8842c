package template

import (
	"fmt"
	"sort"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
)

// fieldReferences is the label of the references contract's field.
const fieldReferences = "references"

// conditionalReferences finds, in the files of inst (the kind's own
// package), the `references` fields declared inside a top-level
// comprehension (if or for, at any depth): they exist only once a CR is
// filled in, so a load that looks the field up does not see them. unknown
// are the places whose label it cannot tell statically (a field whose name
// is computed, an expression embedded in a comprehension), as
// "file:line:column: what".
func conditionalReferences(inst *build.Instance) (declared bool, unknown []string) {
	var walk func(decls []ast.Decl, inComprehension bool)
	walk = func(decls []ast.Decl, inComprehension bool) {
		for _, d := range decls {
			switch x := d.(type) {
			case *ast.Field:
				name, ok := labelName(x.Label)
				switch {
				case !ok:
					unknown = append(unknown, fmt.Sprintf("%s: a top-level field whose name is computed: cueop cannot tell whether it declares %s, which it would then never read; write the label %s literally",
						ShortPos(x.Pos()), fieldReferences, fieldReferences))
				case name == fieldReferences && inComprehension:
					declared = true
				}
			case *ast.Comprehension:
				if s, ok := x.Value.(*ast.StructLit); ok {
					walk(s.Elts, true)
				}
			case *ast.EmbedDecl:
				switch e := x.Expr.(type) {
				case *ast.StructLit:
					walk(e.Elts, inComprehension)
				default:
					if inComprehension {
						unknown = append(unknown, fmt.Sprintf("%s: an expression embedded in a top-level comprehension: cueop cannot tell whether it declares %s, which it would then never read; declare %s as a field of the comprehension's struct",
							ShortPos(x.Pos()), fieldReferences, fieldReferences))
					}
				}
			}
		}
	}
	for _, f := range inst.Files {
		walk(f.Decls, false)
	}
	sort.Strings(unknown)
	return declared, unknown
}

// withConditionalReferences unifies the references contract into a
// template whose references exist only for some CRs (declared in a
// top-level comprehension): each CR's references are then checked against
// it as unconditional ones are, and the kind has references.
func withConditionalReferences(v cue.Value) (cue.Value, error) {
	s := v.Context().CompileString(referencesSchema, cue.Filename(ReferencesContract))
	out := v.FillPath(PathReferences, s)
	if err := out.Err(); err != nil {
		return v, fmt.Errorf("%s: %w", PathReferences, Positioned(err))
	}
	return out, nil
}
