package template

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/token"
)

// AnyID is the child id of a PathTree read for every observed child (the id
// is computed at run time, or the template loops over observed). It is not
// a valid child id, which must be a label value.
const AnyID = "*"

// PathTree is a set of paths into an object: a node with All set reads the
// whole subtree at its path; otherwise only its Sub paths.
type PathTree struct {
	All bool
	Sub map[string]*PathTree
}

// child returns the subtree for label, created when absent.
func (t *PathTree) child(label string) *PathTree {
	if t.Sub == nil {
		t.Sub = map[string]*PathTree{}
	}
	c := t.Sub[label]
	if c == nil {
		c = &PathTree{}
		t.Sub[label] = c
	}
	return c
}

// add marks path as read as a whole.
func (t *PathTree) add(path []string) {
	n := t
	for _, p := range path {
		if n.All {
			return
		}
		n = n.child(p)
	}
	n.All, n.Sub = true, nil
}

// Paths lists the paths of t, dot separated, sorted; "" is the whole.
func (t *PathTree) Paths() []string {
	var out []string
	var walk func(n *PathTree, prefix string)
	walk = func(n *PathTree, prefix string) {
		if n.All {
			out = append(out, prefix)
			return
		}
		for k, c := range n.Sub {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			walk(c, p)
		}
	}
	if t != nil {
		walk(t, "")
	}
	sort.Strings(out)
	return out
}

// Reads is what a kind's template reads of the inputs the engine fills,
// found when it loads from CUE's resolution of its identifiers (which field,
// let or for clause each one names): each reference to `observed` or
// `parent`, followed through selectors, indexes, lets and for clauses.
//
// Observed's first level is the child id (AnyID for any child); below it,
// paths into the live object. A reference that uses a whole object, or a
// field whose name is computed at run time, reads the whole object (or the
// whole subtree where the computed name starts); Fallbacks say where.
// Existence checks (x != _|_, x == _|_) of a child and len(observed) read
// no field: the render keeps an (empty) object for every observed child.
type Reads struct {
	Observed PathTree
	Parent   PathTree
	// Fallbacks are the places that read whole objects, as
	// "file:line:column: what".
	Fallbacks []string
}

// ObservedWhole reports whether the template reads whole observed objects
// of every child.
func (r *Reads) ObservedWhole() bool { return r.Observed.All }

// AnalyzeReads finds what the files of inst (the kind's own package) read
// of `observed` and `parent`.
func AnalyzeReads(inst *build.Instance) *Reads {
	a := &analyzer{
		parents: map[ast.Node]ast.Node{},
		uses:    map[ast.Node][]*ast.Ident{},
		skip:    map[*ast.Ident]bool{},
		reads:   &Reads{},
	}
	top := topInputs(inst)
	var roots []*ast.Ident
	for _, f := range inst.Files {
		roots = append(roots, a.index(f, top)...)
	}
	a.useRoots(roots, top)
	for n, name := range top {
		if fd, ok := n.(*ast.Field); ok {
			if selfReferent(fd) {
				a.whole(name, nil, fd.Pos(), "declared with an alias or a reference into itself")
				continue
			}
			a.declared(name, fd.Value, nil)
		}
	}
	sort.Strings(a.reads.Fallbacks)
	return a.reads
}

// topInputs are the top-level fields observed and parent of inst's files
// (the field and its value), by the input each is.
func topInputs(inst *build.Instance) map[ast.Node]string {
	top := map[ast.Node]string{}
	for _, f := range inst.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.Field); ok {
				if name, ok := labelName(fd.Label); ok && (name == FieldObserved || name == FieldParent) {
					top[fd] = name
					top[fd.Value] = name
				}
			}
		}
	}
	return top
}

// index records the parent of each node of f, the references by what they
// resolve to and the identifiers that are labels or declarations; it
// returns the identifiers that may reference an input (top, or by name).
func (a *analyzer) index(f *ast.File, top map[ast.Node]string) []*ast.Ident {
	var roots []*ast.Ident
	var stack []ast.Node
	ast.Walk(f, func(n ast.Node) bool {
		if len(stack) > 0 {
			a.parents[n] = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch x := n.(type) {
		case *ast.Field:
			switch l := x.Label.(type) {
			case *ast.Ident:
				a.skip[l] = true
			case *ast.Alias:
				a.skip[l.Ident] = true
				if id, ok := l.Expr.(*ast.Ident); ok {
					a.skip[id] = true
				}
			}
		case *ast.SelectorExpr:
			if id, ok := x.Sel.(*ast.Ident); ok {
				a.skip[id] = true
			}
		case *ast.ForClause:
			if x.Key != nil {
				a.skip[x.Key] = true
			}
			a.skip[x.Value] = true
		case *ast.LetClause:
			a.skip[x.Ident] = true
		case *ast.ImportSpec:
			if x.Name != nil {
				a.skip[x.Name] = true
			}
		case *ast.Ident:
			if x.Node != nil {
				a.uses[x.Node] = append(a.uses[x.Node], x)
			}
			if _, isTop := top[x.Node]; isTop || x.Name == FieldObserved || x.Name == FieldParent {
				roots = append(roots, x)
			}
		}
		return true
	}, func(ast.Node) { stack = stack[:len(stack)-1] })
	return roots
}

// useRoots records what each reference among roots to an input reads.
func (a *analyzer) useRoots(roots []*ast.Ident, top map[ast.Node]string) {
	for _, id := range roots {
		if a.skip[id] {
			continue
		}
		// A reference to the top-level field, whatever its name (an alias,
		// O=observed: ..., names it otherwise), or, unresolved, to a field
		// of that name declared in another file of the package.
		name, ok := top[id.Node]
		if !ok && id.Node == nil && id.Scope == nil && (id.Name == FieldObserved || id.Name == FieldParent) {
			name, ok = id.Name, true
		}
		if ok {
			a.use(id, name, nil)
		}
	}
}

type analyzer struct {
	parents map[ast.Node]ast.Node
	uses    map[ast.Node][]*ast.Ident // references by what they resolve to
	skip    map[*ast.Ident]bool       // labels and declarations, not references
	reads   *Reads
}

func (a *analyzer) tree(input string) *PathTree {
	if input == FieldObserved {
		return &a.reads.Observed
	}
	return &a.reads.Parent
}

// depth is how deep path is inside one object: observed's paths start
// with the child id.
func depth(input string, path []string) int {
	if input == FieldObserved {
		return len(path) - 1
	}
	return len(path)
}

func (a *analyzer) whole(input string, path []string, pos token.Pos, what string) {
	a.tree(input).add(path)
	a.reads.Fallbacks = append(a.reads.Fallbacks, fmt.Sprintf("%s: %s: %s", ShortPos(pos), describe(input, path), what))
}

func describe(input string, path []string) string {
	if len(path) == 0 {
		return input
	}
	return input + "." + strings.Join(path, ".")
}

// use follows the expression n, which stands for path of input, up through
// the selectors and indexes applied to it, and records what its context
// reads.
func (a *analyzer) use(n ast.Node, input string, path []string) {
	path, cur, done := a.climb(n, input, path)
	if done {
		return
	}
	if depth(input, path) > 0 {
		a.tree(input).add(path)
		return
	}
	a.useWhole(cur, input, path)
}

// climb follows n, which stands for path of input, up through the
// selectors and indexes applied to it: it returns the path they select
// and the outermost of them, or done when it recorded the read already.
func (a *analyzer) climb(n ast.Node, input string, path []string) (_ []string, _ ast.Node, done bool) {
	path = append([]string(nil), path...)
	cur := n
climb:
	for {
		switch x := a.parents[cur].(type) {
		case *ast.ParenExpr:
			cur = x
		case *ast.SelectorExpr:
			if x.X != cur {
				break climb
			}
			name, ok := labelName(x.Sel)
			if !ok {
				a.whole(input, path, x.Pos(), "field selected by a computed name")
				return nil, nil, true
			}
			path, cur = append(path, name), x
		case *ast.IndexExpr:
			if x.X != cur {
				break climb
			}
			if s, ok := stringLit(x.Index); ok {
				path, cur = append(path, s), x
				continue
			}
			if input == FieldObserved && len(path) == 0 {
				path, cur = append(path, AnyID), x // child id computed at run time
				continue
			}
			if depth(input, path) > 0 {
				a.tree(input).add(path) // a list element, or a computed field: the subtree
				return nil, nil, true
			}
			a.whole(input, path, x.Pos(), "field selected by a computed name")
			return nil, nil, true
		default:
			break climb
		}
	}
	return path, cur, false
}

// useWhole records the use of cur, the whole input (observed) or one
// whole object (path of input): only some contexts need no field of it.
func (a *analyzer) useWhole(cur ast.Node, input string, path []string) {
	switch x := a.parents[cur].(type) {
	case *ast.BinaryExpr:
		if (x.Op == token.EQL || x.Op == token.NEQ) && (isBottom(x.X) || isBottom(x.Y)) {
			return // an existence check
		}
	case *ast.LetClause:
		if x.Expr == cur {
			a.follow(x, x.Ident.Name, input, path)
			return
		}
	case *ast.ForClause:
		if x.Source == cur && input == FieldObserved && len(path) == 0 {
			a.follow(x, x.Value.Name, input, []string{AnyID})
			return
		}
	case *ast.CallExpr:
		if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "len" && input == FieldObserved && len(path) == 0 {
			return // the number of children: every id is kept
		}
	}
	a.whole(input, path, cur.Pos(), "used as a whole")
}

// follow records the uses of the variable name declared by clause, which
// stands for path of input.
func (a *analyzer) follow(clause ast.Node, name, input string, path []string) {
	for _, id := range a.uses[clause] {
		if id.Name == name && !a.skip[id] {
			a.use(id, input, path)
		}
	}
	// Resolution may point a reference at the declaring identifier rather
	// than the clause.
	var decl ast.Node
	switch x := clause.(type) {
	case *ast.LetClause:
		decl = x.Ident
	case *ast.ForClause:
		decl = x.Value
	}
	for _, id := range a.uses[decl] {
		if id.Name == name && !a.skip[id] {
			a.use(id, input, path)
		}
	}
}

// declared records what a declaration of input (its top-level field)
// constrains: a constraint on a field reads it, as a live value that breaks
// it fails the render.
func (a *analyzer) declared(input string, e ast.Expr, path []string) {
	switch x := e.(type) {
	case *ast.StructLit:
		for _, d := range x.Elts {
			switch f := d.(type) {
			case *ast.Field:
				if name, ok := labelName(f.Label); ok {
					a.declared(input, f.Value, append(append([]string(nil), path...), name))
					continue
				}
				if _, ok := f.Label.(*ast.ListLit); ok && input == FieldObserved && len(path) == 0 {
					a.declared(input, f.Value, []string{AnyID})
					continue
				}
				a.declaredWhole(input, path, f.Pos())
			case *ast.Ellipsis, *ast.Attribute, *ast.CommentGroup:
			case *ast.EmbedDecl:
				a.declared(input, f.Expr, path)
			default:
				a.declaredWhole(input, path, d.Pos())
			}
		}
	case *ast.Ident:
		if x.Name != "_" {
			a.declaredWhole(input, path, x.Pos())
		}
	case *ast.BinaryExpr:
		if x.Op == token.AND {
			a.declared(input, x.X, path)
			a.declared(input, x.Y, path)
			return
		}
		a.declaredWhole(input, path, x.Pos())
	case *ast.ParenExpr:
		a.declared(input, x.X, path)
	default:
		a.declaredWhole(input, path, e.Pos())
	}
}

func (a *analyzer) declaredWhole(input string, path []string, pos token.Pos) {
	if depth(input, path) > 0 {
		a.tree(input).add(path)
		return
	}
	a.whole(input, path, pos, "constrained as a whole")
}

// labelName is the name of a field label or selector: an identifier or a
// string literal.
func labelName(l ast.Label) (string, bool) {
	switch x := l.(type) {
	case *ast.Alias: // X=name: the field's name is name
		if e, ok := x.Expr.(ast.Label); ok {
			return labelName(e)
		}
	case *ast.Ident:
		return x.Name, true
	case *ast.BasicLit:
		return stringLit(x)
	}
	return "", false
}

func stringLit(e ast.Node) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	if err != nil {
		return "", false
	}
	return s, true
}

func isBottom(e ast.Expr) bool {
	_, ok := e.(*ast.BottomLit)
	return ok
}

// selfReferent reports whether a declaration of observed or parent has a
// postfix alias or refers to a node inside itself (X={...} then X.status,
// [ID=string]: {id: ID}): what it reads of the object is then more than
// the paths it declares.
func selfReferent(fd *ast.Field) bool {
	if fd.Alias != nil {
		return true
	}
	inside := map[ast.Node]bool{}
	found := false
	ast.Walk(fd.Value, func(n ast.Node) bool {
		inside[n] = true
		return true
	}, nil)
	ast.Walk(fd.Value, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Node != nil && inside[id.Node] {
			found = true
		}
		return !found
	}, nil)
	return found
}
