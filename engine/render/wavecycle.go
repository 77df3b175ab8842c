package render

import (
	"strconv"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
)

// waveCycles refuses a readiness expression that reads, directly, the
// observed state of a child of a later wave: that child is applied only
// once this one is ready, so neither ever is. (Reads through other fields
// are not followed.)
func waveCycles(rv cue.Value, byID map[string]*Child) []string {
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil
	}
	var msgs []string
	for _, id := range ids {
		c := byID[id]
		if c == nil {
			continue
		}
		for _, dep := range observedReads(vals[id]) {
			d := byID[dep]
			if d == nil || d.Wave <= c.Wave {
				continue
			}
			msgs = append(msgs, entryError(template.FieldReadyWhen, id, vals[id],
				"reads observed.%s, a child of wave %d, which is applied only once %s (wave %d) is ready: a cycle", dep, d.Wave, id, c.Wave))
		}
	}
	return msgs
}

// observedReads are the child ids v's source reads as observed.<id> or
// observed["<id>"].
func observedReads(v cue.Value) []string {
	var out []string
	for _, src := range sources(v) {
		ast.Walk(src, func(n ast.Node) bool {
			if id := observedID(n); id != "" {
				out = append(out, id)
			}
			return true
		}, nil)
	}
	return out
}

func observedID(n ast.Node) string {
	switch e := n.(type) {
	case *ast.SelectorExpr:
		if isObserved(e.X) {
			name, _, _ := ast.LabelName(e.Sel)
			return name
		}
	case *ast.IndexExpr:
		if lit, ok := e.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING && isObserved(e.X) {
			s, err := strconv.Unquote(lit.Value)
			if err == nil {
				return s
			}
		}
	}
	return ""
}

func isObserved(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == template.FieldObserved
}

// sources are the template's source expressions of v, through the
// conjunction a contract makes of it.
func sources(v cue.Value) []ast.Node {
	if op, args := v.Expr(); op == cue.AndOp {
		var out []ast.Node
		for _, a := range args {
			out = append(out, sources(a)...)
		}
		return out
	}
	if src := v.Source(); src != nil {
		if f, ok := src.(*ast.Field); ok {
			return []ast.Node{f.Value}
		}
		return []ast.Node{src}
	}
	return nil
}
