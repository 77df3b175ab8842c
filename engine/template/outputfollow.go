package template

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// Elem is the element of a list in an ObservedRead's Path.
const Elem = "[]"

// maxFollow bounds how many lets and fields a chain of names is resolved
// through (let a = observed.x, let b = a.status, b.replicas).
const maxFollow = 8

// namedChain reads x as root.<a>.<b> (selectors and string indexes), root
// an identifier; false where an element is computed.
func namedChain(x ast.Node) (*ast.Ident, []string, bool) {
	var rev []string
	cur := x
	for {
		switch e := cur.(type) {
		case *ast.Ident:
			names := make([]string, len(rev))
			for i := range rev {
				names[i] = rev[len(rev)-1-i]
			}
			return e, names, true
		case *ast.SelectorExpr:
			name, _, err := ast.LabelName(e.Sel)
			if err != nil {
				return nil, nil, false
			}
			rev = append(rev, name)
			cur = e.X
		case *ast.IndexExpr:
			lit, ok := e.Index.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return nil, nil, false
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return nil, nil, false
			}
			rev = append(rev, s)
			cur = e.X
		case *ast.ParenExpr:
			cur = e.X
		default:
			return nil, nil, false
		}
	}
}

// declarations are the expressions the resolved identifier id stands for:
// the values of every field of its name in the struct that declares it (a
// field may be declared more than once there: status: a: ..., status: b:
// ...), a let's expression, or the node itself (a comprehension's clause,
// an import).
func declarations(id *ast.Ident) []ast.Node {
	var elts []ast.Decl
	switch s := id.Scope.(type) {
	case *ast.StructLit:
		elts = s.Elts
	case *ast.File:
		elts = s.Decls
	}
	var out []ast.Node
	found := false
	for _, e := range elts {
		if f, ok := e.(*ast.Field); ok {
			if name, ok := labelName(f.Label); ok && name == id.Name {
				out = append(out, f.Value)
				found = found || f.Value == id.Node || f == id.Node
			}
		}
	}
	if found {
		return out
	}
	switch d := id.Node.(type) {
	case *ast.Field:
		return []ast.Node{d.Value}
	case *ast.LetClause:
		return []ast.Node{d.Expr}
	}
	return []ast.Node{id.Node}
}

// narrow follows names into the struct literals of nodes: the values of
// the fields so named (and the clauses of the comprehensions that declare
// them), as deep as every node is a struct literal (or a conjunction of
// them) that says for certain which fields it has. It returns what it
// reached and the names left.
func narrow(nodes []ast.Node, names []string) ([]ast.Node, []string) {
	for i, name := range names {
		var next []ast.Node
		for _, n := range nodes {
			vals, ok := fieldsNamed(n, name)
			if !ok {
				return nodes, names[i:]
			}
			next = append(next, vals...)
		}
		nodes = next
	}
	return nodes, nil
}

// fieldsNamed are the values of n's fields named name; false when n is not
// a struct literal whose fields are all written out.
func fieldsNamed(n ast.Node, name string) ([]ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ParenExpr:
		return fieldsNamed(x.X, name)
	case *ast.BinaryExpr:
		if x.Op != token.AND {
			return nil, false
		}
		a, ok1 := fieldsNamed(x.X, name)
		b, ok2 := fieldsNamed(x.Y, name)
		return append(a, b...), ok1 && ok2
	case *ast.StructLit:
		return declsNamed(x.Elts, name)
	}
	return nil, false
}

func declsNamed(elts []ast.Decl, name string) ([]ast.Node, bool) {
	var out []ast.Node
	for _, e := range elts {
		switch d := e.(type) {
		case *ast.Field:
			n, ok := labelName(d.Label)
			if !ok {
				return nil, false // a pattern or computed label may match name
			}
			if n == name {
				out = append(out, d.Value)
			}
		case *ast.Comprehension:
			s, ok := d.Value.(*ast.StructLit)
			if !ok {
				return nil, false
			}
			vals, ok := declsNamed(s.Elts, name)
			if !ok {
				return nil, false
			}
			if len(vals) > 0 {
				for _, c := range d.Clauses {
					out = append(out, c)
				}
				out = append(out, vals...)
			}
		case *ast.EmbedDecl:
			vals, ok := fieldsNamed(d.Expr, name)
			if !ok {
				return nil, false
			}
			out = append(out, vals...)
		case *ast.LetClause, *ast.Attribute, *ast.CommentGroup:
		default:
			return nil, false
		}
	}
	return out, true
}

// resolveObserved reads n as a read of observed: observed.<id>.<path>
// itself, or a name that stands, through lets and fields, for one
// (let d = observed.deploy; d.status).
func resolveObserved(n ast.Node, depth int) (string, []string, bool) {
	switch x := n.(type) {
	case *ast.ParenExpr:
		return resolveObserved(x.X, depth)
	case *ast.UnaryExpr:
		if x.Op == token.MUL { // a default
			return resolveObserved(x.X, depth)
		}
	case *ast.BinaryExpr:
		// *observed.x.status.conditions | []: the one alternative
		// that reads observed.
		if x.Op != token.OR || depth >= maxFollow {
			return "", nil, false
		}
		id, path, ok := resolveObserved(x.X, depth+1)
		id2, path2, ok2 := resolveObserved(x.Y, depth+1)
		switch {
		case ok && !ok2:
			return id, path, true
		case ok2 && !ok:
			return id2, path2, true
		}
		return "", nil, false
	}
	if id, path, ok := observedChain(n); ok {
		return id, path, true
	}
	root, names, ok := namedChain(n)
	if !ok || depth >= maxFollow || root.Node == nil || root.Name == FieldObserved || root.Name == FieldParent {
		return "", nil, false
	}
	if fc, isFor := root.Scope.(*ast.ForClause); isFor {
		if fc.Value == nil || root.Node != fc.Value {
			return "", nil, false // a key or index
		}
		id, path, ok := resolveObserved(fc.Source, depth+1)
		if !ok || len(path) == 0 {
			return "", nil, false
		}
		return id, append(append(append([]string{}, path...), Elem), names...), true
	}
	targets, rest := narrow(declarations(root), names)
	if len(targets) != 1 {
		return "", nil, false
	}
	if o, isIdent := targets[0].(*ast.Ident); isIdent && o.Name == FieldObserved && len(rest) > 0 { // let o = observed
		return rest[0], rest[1:], true
	}
	id, path, ok := resolveObserved(targets[0], depth+1)
	if !ok {
		return "", nil, false
	}
	return id, append(append([]string{}, path...), rest...), true
}
