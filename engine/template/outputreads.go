package template

import (
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Outputs is what a kind's template computes from the observed children
// (its status, conditions, ready and readyWhen), found in its files when it
// loads: each read of observed.<id>.<path> those fields make, directly or
// through the fields and lets they name, and the kinds of the children
// declared with a literal apiVersion and kind.
type Outputs struct {
	Reads []ObservedRead
	// Ready tells that the template gives `ready`; otherwise Ready
	// follows the children (their readyWhen, else kstatus).
	Ready bool
	// Children are the kinds of the children whose apiVersion and kind are
	// known without a CR (not under a condition or a loop), by id.
	Children map[string]schema.GroupVersionKind
}

// ObservedRead is a read of observed.<ID>.<Path> at Pos, part of the output
// field In ("status.replicas", "conditions.Available", "ready",
// "readyWhen.migrate"; empty for a read found outside them), reached
// through the field or let Via ("" when In reads it itself).
//
// A Path element Elem stands for every element of the list before it: the
// variable of `for c in observed.x.status.conditions` read as c.type is
// status.conditions, Elem, type.
type ObservedRead struct {
	In   string
	ID   string
	Path []string
	Pos  token.Pos
	Via  string
}

// Root is the top-level output field of In: status, conditions, ready or
// readyWhen.
func (r ObservedRead) Root() string {
	root, _, _ := strings.Cut(r.In, ".")
	return root
}

// Read is the read as the template writes it: observed.deployment.status.x,
// observed.deployment.status.conditions[].type for a field of an element.
func (r ObservedRead) Read() string {
	return strings.ReplaceAll(strings.Join(append([]string{FieldObserved, r.ID}, r.Path...), "."), "."+Elem, Elem)
}

// outputRoots are the top-level fields computed from observed.
var outputRoots = map[string]bool{FieldStatus: true, FieldConditions: true, FieldReady: true, FieldReadyWhen: true}

// analyzeOutputs finds the outputs of inst, compiled as v.
func analyzeOutputs(inst *build.Instance, v cue.Value) *Outputs {
	out := &Outputs{Children: map[string]schema.GroupVersionKind{}}
	var decls func(elts []ast.Decl)
	decls = func(elts []ast.Decl) {
		for _, d := range elts {
			switch x := d.(type) {
			case *ast.Field:
				name, ok := labelName(x.Label)
				if !ok || !outputRoots[name] {
					continue
				}
				out.Ready = out.Ready || name == FieldReady
				for _, part := range outputParts(name, x.Value) {
					out.Reads = append(out.Reads, readsIn(part.in, part.value)...)
				}
			case *ast.Comprehension:
				if s, ok := x.Value.(*ast.StructLit); ok {
					decls(s.Elts)
				}
			case *ast.EmbedDecl:
				if s, ok := x.Expr.(*ast.StructLit); ok {
					decls(s.Elts)
				}
			}
		}
	}
	for _, f := range inst.Files {
		decls(f.Decls)
	}
	sort.SliceStable(out.Reads, func(i, j int) bool { return out.Reads[i].Pos.Before(out.Reads[j].Pos) })
	out.Reads = onePerPosition(out.Reads)
	for _, r := range out.Reads {
		if _, done := out.Children[r.ID]; done {
			continue
		}
		c := v.LookupPath(PathChildren).LookupPath(cue.MakePath(cue.Str(r.ID)))
		av, err1 := c.LookupPath(cue.ParsePath("apiVersion")).String()
		kind, err2 := c.LookupPath(cue.ParsePath("kind")).String()
		if err1 == nil && err2 == nil {
			out.Children[r.ID] = schema.FromAPIVersionAndKind(av, kind)
		}
	}
	return out
}

// onePerPosition keeps, of the reads sorted by position, one per position
// and output root (per gate for readyWhen: each child's counts on its own),
// a direct read rather than one through a field: a shared field that many
// outputs name (status: {a: len(_all), b: len(_all)}) is listed once, not
// once per output that names it.
func onePerPosition(reads []ObservedRead) []ObservedRead {
	type key struct {
		pos  token.Pos
		root string
	}
	at := map[key]int{}
	out := reads[:0]
	for _, r := range reads {
		k := key{r.Pos, r.Root()}
		if k.root == FieldReadyWhen {
			k.root = r.In
		}
		if i, seen := at[k]; seen {
			if out[i].Via != "" && r.Via == "" {
				out[i] = r
			}
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}

type outputPart struct {
	in    string
	value ast.Node
}

// outputParts splits the value of the output field root into the parts
// named by its first level (status.replicas, conditions.Available), through
// conjunctions (#Status & {...}) and comprehensions.
func outputParts(root string, value ast.Expr) []outputPart {
	var out []outputPart
	var expr func(e ast.Expr)
	var elts func(ds []ast.Decl)
	expr = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.StructLit:
			elts(x.Elts)
		case *ast.BinaryExpr:
			if x.Op == token.AND {
				expr(x.X)
				expr(x.Y)
				return
			}
			out = append(out, outputPart{root, x})
		case *ast.ParenExpr:
			expr(x.X)
		default:
			out = append(out, outputPart{root, e})
		}
	}
	elts = func(ds []ast.Decl) {
		for _, d := range ds {
			switch x := d.(type) {
			case *ast.Field:
				if name, ok := labelName(x.Label); ok && root != FieldReady {
					out = append(out, outputPart{root + "." + name, x.Value})
				} else {
					out = append(out, outputPart{root, x.Value})
				}
			case *ast.Comprehension:
				for _, c := range x.Clauses {
					out = append(out, outputPart{root, c})
				}
				if s, ok := x.Value.(*ast.StructLit); ok {
					elts(s.Elts)
				}
			case *ast.EmbedDecl:
				expr(x.Expr)
			default:
				out = append(out, outputPart{root, d})
			}
		}
	}
	expr(value)
	return out
}

// readsIn finds the observed reads of n, part of the output field in.
func readsIn(in string, n ast.Node) []ObservedRead {
	reads := ObservedReads([]ast.Node{n})
	for i := range reads {
		reads[i].In = in
	}
	return reads
}

// ObservedReads finds the observed reads of the expressions srcs, following
// once every identifier that names a field or let elsewhere (a hidden
// `_conditions: *observed.x.status.conditions | []`). A read through a
// computed id or field stops where its name is computed.
func ObservedReads(srcs []ast.Node) []ObservedRead {
	var out []ObservedRead
	seen := map[ast.Node]bool{}
	var walk func(n ast.Node, via string)
	walk = func(n ast.Node, via string) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		ast.Walk(n, func(x ast.Node) bool {
			if id, path, ok := observedChain(x); ok {
				out = append(out, ObservedRead{ID: id, Path: path, Pos: x.Pos(), Via: via})
				return false
			}
			root, names, ok := namedChain(x)
			if !ok || root.Node == nil || root.Name == FieldObserved || root.Name == FieldParent {
				return true
			}
			next := via
			if next == "" {
				next = root.Name
			}
			// Only what the names select is read: status.ready reads
			// status's field ready, not all of status.
			targets, rest := narrow(declarations(root), names)
			if len(rest) > 0 { // d.status.x, d a let of observed.deploy
				if id, path, ok := resolveObserved(x, 0); ok {
					out = append(out, ObservedRead{ID: id, Path: path, Pos: x.Pos(), Via: next})
					return false
				}
			}
			for _, t := range targets {
				walk(t, next)
			}
			return false
		}, nil)
	}
	for _, s := range srcs {
		walk(s, "")
	}
	return out
}

// observedChain reads x as observed.<id>.<a>.<b> (selectors and string
// indexes), stopping at the first element it cannot name.
func observedChain(x ast.Node) (string, []string, bool) {
	var rev []string
	cur := x
	for {
		switch e := cur.(type) {
		case *ast.SelectorExpr:
			name, _, err := ast.LabelName(e.Sel)
			if err != nil {
				rev = nil
			} else {
				rev = append(rev, name)
			}
			cur = e.X
			continue
		case *ast.IndexExpr:
			lit, ok := e.Index.(*ast.BasicLit)
			var s string
			var err error = strconv.ErrSyntax
			if ok && lit.Kind == token.STRING {
				s, err = strconv.Unquote(lit.Value)
			}
			if err != nil {
				rev = nil
			} else {
				rev = append(rev, s)
			}
			cur = e.X
			continue
		case *ast.ParenExpr:
			cur = e.X
			continue
		}
		break
	}
	root, isIdent := cur.(*ast.Ident)
	if !isIdent || root.Name != FieldObserved || len(rev) == 0 {
		return "", nil, false
	}
	path := make([]string, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		path = append(path, rev[i])
	}
	return path[0], path[1:], true
}
