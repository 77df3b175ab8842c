package identity

import (
	"path"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// alt is one way a child's declarations can unify: the apiVersion and
// kind it ends with ("" where none is written), and what could not be
// followed on the way.
type alt struct {
	apiVersion, kind lit
	// opaque is the first operand that could not be followed (an import,
	// a comprehension's value): it may give the apiVersion and kind.
	opaque ast.Node
}

// lit is a string literal and where it is written.
type lit struct {
	value string
	pos   token.Pos
}

// maxAlts bounds the alternatives of one child: conditionals multiply.
const maxAlts = 64

// decide is the kinds of one child or reference: those of each of its
// alternatives that end with both an apiVersion and a kind. One that does
// not, while none does, is a warning, as is any computed apiVersion or
// kind.
func (s *source) decide(o *occurrences) []Use {
	alts := []alt{{}}
	for _, e := range o.exprs {
		alts = s.combine(alts, s.alts(e.expr, o.path, 0), e.cond)
	}
	var uses []Use
	var opaque ast.Node
	for _, a := range alts {
		if a.apiVersion.value == "" || a.kind.value == "" {
			if opaque == nil {
				opaque = a.opaque
			}
			continue
		}
		gv, err := schema.ParseGroupVersion(a.apiVersion.value)
		if err != nil {
			s.warn(a.apiVersion.pos, "%s: apiVersion %q: %v", o.path, a.apiVersion.value, err)
			continue
		}
		u := Use{GroupKind: schema.GroupKind{Group: gv.Group, Kind: a.kind.value}, Reference: o.ref, Path: o.path, Pos: posText(a.kind.pos)}
		if !slices.ContainsFunc(uses, func(x Use) bool { return x.GroupKind == u.GroupKind }) {
			uses = append(uses, u)
		}
	}
	switch {
	case len(uses) > 0, s.computed[o.path]: // computed: warned already
	case opaque != nil:
		s.warn(opaque.Pos(), "%s: %s cannot be followed: the template does not tell its apiVersion and kind; only the golden cases and samples that render it give its rights", o.path, exprText(opaque))
	default:
		s.warn(o.pos, "%s: no apiVersion and kind written: the template does not tell them; only the golden cases and samples that render it give its rights", o.path)
	}
	return uses
}

// combine unifies each of alts with each of more; when cond (more may not
// apply), alts as they are stay alternatives too.
func (s *source) combine(alts, more []alt, cond bool) []alt {
	var out []alt
	if cond {
		out = slices.Clone(alts)
	}
	for _, a := range alts {
		for _, b := range more {
			if m, ok := merge(a, b); ok {
				out = append(out, m)
			}
		}
	}
	out = slices.CompactFunc(sortAlts(out), func(a, b alt) bool { return altKey(a) == altKey(b) })
	if len(out) > maxAlts {
		out = out[:maxAlts]
	}
	return out
}

// merge unifies a and b; ok is false when they conflict (the branch is
// bottom: no child).
func merge(a, b alt) (alt, bool) {
	for _, f := range []struct{ x, y *lit }{{&a.apiVersion, &b.apiVersion}, {&a.kind, &b.kind}} {
		if f.x.value == "" {
			*f.x = *f.y
		} else if f.y.value != "" && f.y.value != f.x.value {
			return alt{}, false
		}
	}
	if a.opaque == nil {
		a.opaque = b.opaque
	}
	return a, true
}

func altKey(a alt) string {
	k := a.apiVersion.value + "\x00" + a.kind.value
	if a.opaque != nil {
		k += "\x00" + a.opaque.Pos().String()
	}
	return k
}

func sortAlts(alts []alt) []alt {
	slices.SortStableFunc(alts, func(a, b alt) int { return strings.Compare(altKey(a), altKey(b)) })
	return alts
}

// alts are the alternatives of x, a value declared for the child at path.
func (s *source) alts(x ast.Expr, path string, depth int) []alt {
	if depth > maxDepth {
		return []alt{{opaque: x}}
	}
	switch x := x.(type) {
	case *ast.StructLit:
		return s.structAlts(x, path, depth)
	case *ast.BinaryExpr:
		l, r := s.alts(x.X, path, depth), s.alts(x.Y, path, depth)
		if x.Op == token.OR {
			return append(l, r...)
		}
		if x.Op == token.AND {
			return s.combine(l, r, false)
		}
	case *ast.ParenExpr:
		return s.alts(x.X, path, depth)
	case *ast.UnaryExpr:
		if x.Op == token.MUL {
			return s.alts(x.X, path, depth)
		}
	case *ast.Ident:
		return s.identAlts(x, path, depth)
	}
	return []alt{{opaque: x}}
}

// identAlts are the alternatives of what x refers to: its declarations
// unified, a file embedded with @embed(file=...) read as an object.
func (s *source) identAlts(x *ast.Ident, path string, depth int) []alt {
	fields, ok := s.resolve(x)
	if !ok {
		return []alt{{opaque: x}}
	}
	out := []alt{{}}
	for _, f := range fields {
		more := s.alts(f.Value, path, depth+1)
		if a, ok := s.embedded(f); ok {
			more = []alt{a}
		}
		out = s.combine(out, more, false)
	}
	return out
}

// structAlts are the alternatives of st: its own apiVersion and kind
// fields, unified with its embeddings and, where they apply, its
// comprehensions.
func (s *source) structAlts(st *ast.StructLit, path string, depth int) []alt {
	out := []alt{{}}
	for _, d := range st.Elts {
		switch d := d.(type) {
		case *ast.Field:
			switch name, _, _ := ast.LabelName(d.Label); name {
			case "apiVersion", "kind":
				out = s.combine(out, s.fieldAlts(d, name, path, depth), false)
			}
		case *ast.EmbedDecl:
			out = s.combine(out, s.alts(d.Expr, path, depth), false)
		case *ast.Comprehension:
			more := s.alts(d.Value, path, depth)
			if d.Fallback != nil {
				more = append(more, s.alts(d.Fallback.Body, path, depth)...)
			}
			out = s.combine(out, more, true)
		}
	}
	return out
}

// fieldAlts are the alternatives of the apiVersion or kind field f: one
// per string literal it can be. A value computed (from the CR, say) is a
// warning at its position, and no alternative.
func (s *source) fieldAlts(f *ast.Field, name, path string, depth int) []alt {
	lits, ok := s.literals(f.Value, depth)
	if !ok {
		s.computed[path] = true
		s.warn(f.Value.Pos(), "%s: %s is computed (%s): the template does not tell which kinds it can be; only the golden cases and samples that render it give its rights", path, name, exprText(f.Value))
		return []alt{{}}
	}
	out := make([]alt, 0, len(lits))
	for _, l := range lits {
		if name == "kind" {
			out = append(out, alt{kind: l})
		} else {
			out = append(out, alt{apiVersion: l})
		}
	}
	return out
}

// literals are the strings x can be when it is a string literal, a
// disjunction of them (defaults marked or not) or an identifier of one;
// ok is false when it is anything else.
func (s *source) literals(x ast.Expr, depth int) ([]lit, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch x := x.(type) {
	case *ast.BasicLit:
		if v, err := literal.Unquote(x.Value); err == nil && x.Kind == token.STRING {
			return []lit{{value: v, pos: x.Pos()}}, true
		}
	case *ast.BinaryExpr:
		l, lok := s.literals(x.X, depth)
		r, rok := s.literals(x.Y, depth)
		switch {
		case x.Op == token.OR && lok && rok:
			return append(l, r...), true
		case x.Op == token.AND && lok: // "v1" & string
			return l, true
		case x.Op == token.AND && rok:
			return r, true
		}
	case *ast.ParenExpr:
		return s.literals(x.X, depth)
	case *ast.UnaryExpr:
		if x.Op == token.MUL {
			return s.literals(x.X, depth)
		}
	case *ast.Ident:
		if fields, ok := s.resolve(x); ok && len(fields) == 1 {
			return s.literals(fields[0].Value, depth+1)
		}
	}
	return nil, false
}

// embedded is the apiVersion and kind of the object f embeds from a YAML
// or JSON file (_x: _ @embed(file=x.yaml)); ok is false when f embeds
// none.
func (s *source) embedded(f *ast.Field) (alt, bool) {
	for _, a := range f.Attrs {
		name, body := a.Split()
		if name != "embed" {
			continue
		}
		args := attrArgs(body)
		file, ok := args["file"]
		if !ok || args["type"] == "text" || args["type"] == "binary" {
			return alt{opaque: f}, true
		}
		src := s.rel[f.Pos().Filename()]
		data, ok := s.kind.Files[path.Join(path.Dir(src), file)]
		var obj struct{ APIVersion, Kind string }
		if !ok || yaml.Unmarshal(data, &obj) != nil {
			return alt{opaque: f}, true
		}
		out := alt{apiVersion: lit{obj.APIVersion, a.Pos()}, kind: lit{obj.Kind, a.Pos()}}
		if obj.APIVersion == "" || obj.Kind == "" {
			out.opaque = f
		}
		return out, true
	}
	return alt{}, false
}

// attrArgs are the key=value arguments of an attribute's body.
func attrArgs(body string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(body, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		v = strings.TrimSpace(v)
		if u, err := literal.Unquote(v); err == nil {
			v = u
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// posText is pos as file:line:col.
func posText(pos token.Pos) string {
	if !pos.IsValid() {
		return ""
	}
	return shortPos(pos)
}
