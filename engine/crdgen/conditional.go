package crdgen

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// conditional is a field that a struct of #Spec has only under a
// condition on a sibling field: `if exposure == "NodePort" {nodePort!: int}`.
type conditional struct {
	on    string    // the sibling the condition tests: exposure
	equal cue.Value // the value it must equal: "NodePort"
	name  string    // the conditional field: nodePort
	value cue.Value
	mode  fieldMode
	pos   token.Pos
}

// conditionals returns the fields of the struct v that exist under a
// condition `if f == literal { fields }`, f a sibling field. CUE keeps such
// a comprehension pending while f is not concrete, so the fields are found
// in v's syntax and evaluated with f set to the literal. Comprehensions of
// other shapes are not seen.
func conditionals(v cue.Value) []conditional {
	lit := structLit(v.Source())
	if lit == nil {
		return nil
	}
	var out []conditional
	for _, e := range lit.Elts {
		c, ok := e.(*ast.Comprehension)
		if !ok || len(c.Clauses) != 1 {
			continue
		}
		ifc, ok := c.Clauses[0].(*ast.IfClause)
		if !ok {
			continue
		}
		on, eq, ok := equality(ifc.Condition)
		if !ok {
			continue
		}
		sibling := v.LookupPath(cue.MakePath(cue.Str(on)))
		if !sibling.Exists() {
			continue
		}
		want := v.Context().BuildExpr(eq)
		if want.Err() != nil || !want.IsConcrete() {
			continue
		}
		filled := v.FillPath(cue.MakePath(cue.Str(on)), want)
		if filled.Err() != nil {
			continue
		}
		it, err := filled.Fields(cue.Optional(true), cue.Definitions(false), cue.Hidden(false))
		if err != nil {
			continue
		}
		for it.Next() {
			sel := it.Selector()
			if has(v, sel) {
				continue
			}
			out = append(out, conditional{
				on: on, equal: want, name: sel.Unquoted(), value: it.Value(),
				mode: modeOf(sel), pos: c.Pos(),
			})
		}
	}
	return out
}

// has reports whether the struct v has the field sel, of any kind.
func has(v cue.Value, sel cue.Selector) bool {
	it, err := v.Fields(cue.Optional(true), cue.Definitions(false), cue.Hidden(false))
	if err != nil {
		return false
	}
	for it.Next() {
		if it.Selector().Unquoted() == sel.Unquoted() {
			return true
		}
	}
	return false
}

// structLit returns the struct literal of a field or expression node.
func structLit(n ast.Node) *ast.StructLit {
	switch n := n.(type) {
	case *ast.Field:
		return structLit(n.Value)
	case *ast.StructLit:
		return n
	}
	return nil
}

// equality matches `ident == literal` and `literal == ident`.
func equality(e ast.Expr) (string, ast.Expr, bool) {
	if p, ok := e.(*ast.ParenExpr); ok {
		return equality(p.X)
	}
	b, ok := e.(*ast.BinaryExpr)
	if !ok || b.Op != token.EQL {
		return "", nil, false
	}
	if id, ok := b.X.(*ast.Ident); ok {
		if _, ok := b.Y.(*ast.BasicLit); ok {
			return id.Name, b.Y, true
		}
	}
	if id, ok := b.Y.(*ast.Ident); ok {
		if _, ok := b.X.(*ast.BasicLit); ok {
			return id.Name, b.X, true
		}
	}
	return "", nil, false
}
