package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/template"
)

// GateWarnings says, for `cueop vet`, where a wave gate can never open in
// the render of in: a readiness expression (readyWhen) that reads, through
// other fields (waveCycles refuses a direct read), a child of a later wave,
// which is applied only once this child is ready; or that reads a field no
// object of the child's kind has (by the built-in kinds' schemas), so that
// it never becomes true. Each warning starts with the CUE position of the
// read. A render that fails has no warnings: vet reports its error.
func GateWarnings(in Inputs, opts Options) []string {
	if !in.Kind.ReadyWhen {
		return nil
	}
	res, err := RenderInputs(in, opts)
	if err != nil {
		return nil
	}
	byID := map[string]*Child{}
	for i := range res.Children {
		byID[res.Children[i].ID] = &res.Children[i]
	}
	rv := fill(in.Kind, in.Parent, in).LookupPath(template.PathReadyWhen)
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil
	}
	var out []string
	for _, id := range ids {
		if c := byID[id]; c != nil {
			for _, r := range readsThrough(sources(vals[id])) {
				out = append(out, gateWarning(id, c, byID, r)...)
			}
		}
	}
	return out
}

// gateWarning is what is wrong with one read of readyWhen.<id>, if anything.
func gateWarning(id string, c *Child, byID map[string]*Child, r observedRead) []string {
	d := byID[r.id]
	if d == nil {
		return nil
	}
	at := template.ShortPos(r.pos) + ": readyWhen." + id + ": reads observed." + r.id
	if len(r.path) > 0 {
		at += "." + strings.Join(r.path, ".")
	}
	var out []string
	if d.Wave > c.Wave && r.via != "" {
		out = append(out, fmt.Sprintf("%s (through %s), a child of wave %d, which is applied only once %s (wave %d) is ready: the gate never opens",
			at, r.via, d.Wave, id, c.Wave))
	}
	if len(r.path) > 0 && !hasField(d.Object, r.path) {
		out = append(out, fmt.Sprintf("%s: no %s has that field, so %s is never ready: the gate never opens", at, d.Object.GetKind(), id))
	}
	return out
}

// hasField reports whether objects of obj's kind may have the field at
// path, by the built-in schemas; true for a kind with none.
func hasField(obj *unstructured.Unstructured, path []string) bool {
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": map[string]any{"name": "probe"}}}
	if !kschema.Known(probe) || unstructured.SetNestedField(probe.Object, nil, path...) != nil {
		return true
	}
	_, err := kschema.Typed(probe)
	return err == nil || errors.Is(err, kschema.ErrUnknownKind) || !strings.Contains(err.Error(), "not declared in schema")
}

// observedRead is a read of observed.<id>.<path> at pos; via names the
// field it was reached through ("" when read directly).
type observedRead struct {
	id   string
	path []string
	pos  token.Pos
	via  string
}

// readsThrough finds the observed reads of the expressions srcs, following
// every identifier that names a field or let elsewhere (a hidden
// `_conditions: *observed.x.status.conditions | []`) once.
func readsThrough(srcs []ast.Node) []observedRead {
	var out []observedRead
	seen := map[ast.Node]bool{}
	var walk func(n ast.Node, via string)
	walk = func(n ast.Node, via string) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		ast.Walk(n, func(x ast.Node) bool {
			if id, path, ok := observedChain(x); ok {
				out = append(out, observedRead{id: id, path: path, pos: x.Pos(), via: via})
				return false
			}
			if ident, ok := x.(*ast.Ident); ok && ident.Node != nil && ident.Name != "observed" && ident.Name != "parent" {
				next := via
				if next == "" {
					next = ident.Name
				}
				walk(declared(ident.Node), next)
			}
			return true
		}, nil)
	}
	for _, s := range srcs {
		walk(s, "")
	}
	return out
}

// declared is the expression a resolved identifier stands for.
func declared(n ast.Node) ast.Node {
	switch d := n.(type) {
	case *ast.Field:
		return d.Value
	case *ast.LetClause:
		return d.Expr
	}
	return n
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
			s, err := strconv.Unquote(litValue(lit, ok))
			if !ok || lit.Kind != token.STRING || err != nil {
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
	root, isExpr := cur.(ast.Expr)
	if !isExpr || !isObserved(root) || len(rev) == 0 {
		return "", nil, false
	}
	path := make([]string, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		path = append(path, rev[i])
	}
	return path[0], path[1:], true
}

func litValue(lit *ast.BasicLit, ok bool) string {
	if !ok {
		return ""
	}
	return lit.Value
}
