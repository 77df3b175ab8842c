package identity

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// Use is one kind a template can render as a child, or reference, read
// from its source.
type Use struct {
	GroupKind schema.GroupKind
	// Reference tells a referenced kind from a child's.
	Reference bool
	// Path is the child or reference: children.<id> or references.<id>,
	// the id as written ("pod-\(i)") when computed.
	Path string
	// Pos is where its kind is written, file:line:col.
	Pos string
}

// Derive is what k's template can render and reference, read from its CUE
// source (k.Files), every branch of every conditional and comprehension
// included: a Kind ready for Rules, NamespacedRules and ClusterRules. The
// warnings, each with its file:line:col, name the children and references
// whose apiVersion or kind the source does not tell (computed from the CR,
// or from what cannot be followed: an import, a comprehension's value);
// only a render shows those.
func Derive(k *template.Kind) (Kind, []string) {
	uses, warnings := Uses(k)
	out := Empty(k)
	out.Add(uses)
	return out, warnings
}

// DeriveAllowed is Derive keeping what the administrator's allow-lists in
// opts allow (Allowed); err names each kind they refuse.
func DeriveAllowed(k *template.Kind, opts render.Options) (Kind, []string, error) {
	uses, warnings := Uses(k)
	allowed, err := Allowed(uses, opts)
	out := Empty(k)
	out.Add(allowed)
	return out, warnings, err
}

// Empty is k with no children nor references.
func Empty(k *template.Kind) Kind {
	return Kind{GroupKind: schema.GroupKind{Group: k.Resource.Group, Kind: k.Resource.Kind}, Plural: k.Resource.Plural,
		Children: render.KindSet{}, References: render.KindSet{}}
}

// Add adds uses to k's children and references.
func (k *Kind) Add(uses []Use) {
	if k.Children == nil {
		k.Children = render.KindSet{}
	}
	if k.References == nil {
		k.References = render.KindSet{}
	}
	for _, u := range uses {
		if u.Reference {
			k.References[u.GroupKind] = true
		} else {
			k.Children[u.GroupKind] = true
		}
	}
}

// Uses are the kinds k's template can render and reference, each where it
// is written, and the warnings of Derive.
func Uses(k *template.Kind) ([]Use, []string) {
	s := &source{kind: k, top: map[string][]*ast.Field{}, occ: map[string]*occurrences{}, computed: map[string]bool{}}
	s.parse()
	for _, f := range s.files {
		s.walkTop(f.Decls, false)
	}
	var uses []Use
	for _, key := range s.order {
		uses = append(uses, s.decide(s.occ[key])...)
	}
	return uses, s.warnings
}

// source is one kind's package, parsed, and what the walk found in it.
type source struct {
	kind     *template.Kind
	files    []*ast.File
	rel      map[string]string       // file name in positions -> path in kind.Files
	top      map[string][]*ast.Field // the package's top-level fields, by name
	occ      map[string]*occurrences // by section and id
	computed map[string]bool         // paths with a computed apiVersion or kind
	order    []string                // keys of occ, in the order found
	warnings []string
}

// occurrences are the declarations of one child or reference.
type occurrences struct {
	ref   bool
	path  string
	pos   token.Pos
	exprs []occurrence
}

type occurrence struct {
	expr ast.Expr
	cond bool // under a comprehension: it may not apply
}

// parse parses the CUE files of the kind's package: those of its
// directory and, of the same package, of the directories above it (CUE
// makes them part of the package).
func (s *source) parse() {
	root := s.root()
	s.rel = map[string]string{}
	var pkg string
	for _, p := range s.packageFiles() {
		f, err := parser.ParseFile(filepath.Join(root, filepath.FromSlash(p)), s.kind.Files[p])
		if f == nil || (err != nil && len(f.Decls) == 0) {
			continue
		}
		if name := f.PackageName(); path.Dir(p) == s.kind.Name && (pkg == "" || declaresResource(f)) {
			pkg = name
		}
		s.files = append(s.files, f)
		s.rel[f.Filename] = p
	}
	s.files = slices.DeleteFunc(s.files, func(f *ast.File) bool { return f.PackageName() != pkg })
	for _, f := range s.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.Field); ok {
				if name, _, err := ast.LabelName(fd.Label); err == nil {
					s.top[name] = append(s.top[name], fd)
				}
			}
		}
	}
}

// root is the directory the kind's Files are relative to, for positions
// that name the files as a load does.
func (s *source) root() string {
	dir, name := s.kind.Dir, filepath.FromSlash(s.kind.Name)
	if dir == "" || !strings.HasSuffix(dir, string(filepath.Separator)+name) {
		return dir
	}
	return strings.TrimSuffix(dir, string(filepath.Separator)+name)
}

// packageFiles are the .cue files of the kind's directory and of those
// above it, sorted.
func (s *source) packageFiles() []string {
	var out []string
	for p := range s.kind.Files {
		dir := path.Dir(p)
		if !strings.HasSuffix(p, ".cue") || strings.HasPrefix(p, "cue.mod/") || strings.Contains(p, "/cue.mod/") {
			continue
		}
		if dir == s.kind.Name || dir == "." || strings.HasPrefix(s.kind.Name, dir+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func declaresResource(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if name, _, _ := ast.LabelName(fd.Label); name == "resource" {
				return true
			}
		}
	}
	return false
}

// walkTop finds children and references in the package's top-level
// declarations, and in those of its top-level comprehensions (cond).
func (s *source) walkTop(decls []ast.Decl, cond bool) {
	for _, d := range decls {
		switch d := d.(type) {
		case *ast.Field:
			switch name, _, _ := ast.LabelName(d.Label); name {
			case "children", "references":
				s.collect(d.Value, name, cond, 0)
			}
		case *ast.Comprehension:
			s.walkTop(structElts(d.Value), true)
			if d.Fallback != nil {
				s.walkTop(d.Fallback.Body.Elts, true)
			}
		case *ast.EmbedDecl:
			s.walkTop(structElts(d.Expr), cond)
		}
	}
}

func structElts(x ast.Expr) []ast.Decl {
	if st, ok := x.(*ast.StructLit); ok {
		return st.Elts
	}
	return nil
}

// maxDepth bounds how far identifiers are followed (a cycle, or a chain
// too long to be worth it, is not followed).
const maxDepth = 16

// collect records the ids declared in x, the value of children or
// references (section), with their values.
func (s *source) collect(x ast.Expr, section string, cond bool, depth int) {
	if depth > maxDepth {
		s.warn(x.Pos(), "%s: %s cannot be followed: the template does not tell what it declares; only the golden cases and samples give its rights", section, exprText(x))
		return
	}
	switch x := x.(type) {
	case *ast.StructLit:
		s.collectStruct(x, section, cond, depth)
	case *ast.BinaryExpr:
		s.collect(x.X, section, cond || x.Op == token.OR, depth)
		s.collect(x.Y, section, cond || x.Op == token.OR, depth)
	case *ast.ParenExpr:
		s.collect(x.X, section, cond, depth)
	case *ast.UnaryExpr:
		s.collect(x.X, section, cond, depth)
	case *ast.Ident:
		fields, ok := s.resolve(x)
		if !ok {
			s.warn(x.Pos(), "%s: %s cannot be followed: the template does not tell what it declares; only the golden cases and samples give its rights", section, x.Name)
		}
		for _, f := range fields {
			s.collect(f.Value, section, cond, depth+1)
		}
	default:
		s.warn(x.Pos(), "%s: %s cannot be followed: the template does not tell what it declares; only the golden cases and samples give its rights", section, exprText(x))
	}
}

// collectStruct records the fields of st, and of its comprehensions and
// embeddings.
func (s *source) collectStruct(st *ast.StructLit, section string, cond bool, depth int) {
	for _, d := range st.Elts {
		switch d := d.(type) {
		case *ast.Field:
			s.add(d, section, cond)
		case *ast.Comprehension:
			s.collect(d.Value, section, true, depth)
			if d.Fallback != nil {
				s.collect(d.Fallback.Body, section, true, depth)
			}
		case *ast.EmbedDecl:
			s.collect(d.Expr, section, cond, depth)
		}
	}
}

// add records one declaration of a child or reference: a field of
// children or references. A pattern ([string]: ...), hidden field or
// definition declares none.
func (s *source) add(f *ast.Field, section string, cond bool) {
	label := f.Label
	if a, ok := label.(*ast.Alias); ok {
		if l, ok := a.Expr.(ast.Label); ok {
			label = l
		}
	}
	key, id := "", ""
	switch name, isIdent, err := ast.LabelName(label); {
	case err == nil && isIdent && (strings.HasPrefix(name, "_") || strings.HasPrefix(name, "#")):
		return
	case err == nil:
		key, id = section+"."+name, name
	default:
		if _, pattern := label.(*ast.ListLit); pattern {
			return
		}
		id = exprText(label)
		key = section + "." + id + "@" + f.Pos().String()
	}
	o := s.occ[key]
	if o == nil {
		o = &occurrences{ref: section == "references", path: section + "." + id, pos: f.Pos()}
		s.occ[key] = o
		s.order = append(s.order, key)
	}
	o.exprs = append(o.exprs, occurrence{expr: f.Value, cond: cond})
}

// resolve is what the identifier x refers to: a let, a field of an
// enclosing struct, or a top-level field of the package (in any of its
// files). ok is false when it is none of those (a comprehension's value,
// an import, a builtin).
func (s *source) resolve(x *ast.Ident) ([]*ast.Field, bool) {
	if l, ok := x.Node.(*ast.LetClause); ok {
		return []*ast.Field{{Label: l.Ident, Value: l.Expr}}, true
	}
	switch scope := x.Scope.(type) {
	case nil, *ast.File:
		fields := s.top[x.Name]
		return fields, len(fields) > 0
	case *ast.StructLit:
		var out []*ast.Field
		for _, d := range scope.Elts {
			if f, ok := d.(*ast.Field); ok && f.Label == x.Node {
				out = append(out, f)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// warn adds a warning at pos.
func (s *source) warn(pos token.Pos, format string, args ...any) {
	w := shortPos(pos) + ": " + fmt.Sprintf(format, args...)
	if !slices.Contains(s.warnings, w) {
		s.warnings = append(s.warnings, w)
	}
}

// shortPos is pos as file:line:col, the file as a load names it.
var shortPos = template.ShortPos

// exprText is x as written, on one line.
func exprText(x ast.Node) string {
	b, err := format.Node(x)
	if err != nil {
		return fmt.Sprintf("%T", x)
	}
	t := strings.Join(strings.Fields(string(b)), " ")
	if len(t) > 60 {
		t = t[:57] + "..."
	}
	return t
}

// Allowed are the uses the administrator's allow-lists in opts let a
// template have, as a render checks them: a child of an allowed,
// namespaced kind, a reference of a readable kind. Each other one is an
// error naming it and where its kind is written.
func Allowed(uses []Use, opts render.Options) ([]Use, error) {
	allowed, readable, scope := opts.AllowedKinds, opts.ReadableKinds, opts.Scope
	if allowed == nil {
		allowed = render.MustKindSet(render.DefaultAllowedKinds)
	}
	if readable == nil {
		readable = render.MustKindSet(render.DefaultReadableKinds)
	}
	if scope == nil {
		scope = render.BuiltinScope
	}
	var out []Use
	var errs []error
	for _, u := range uses {
		msg := ""
		switch namespaced, known := scope(u.GroupKind); {
		case u.Reference && !readable[u.GroupKind]:
			msg = fmt.Sprintf("kind %s is not in the readable kinds (%s): the administrator allows more with --readable-kinds", u.GroupKind, readable)
		case u.Reference:
		case !allowed[u.GroupKind]:
			msg = fmt.Sprintf("kind %s is not in the allowed kinds (%s)", u.GroupKind, allowed)
		case !known || !namespaced:
			msg = fmt.Sprintf("kind %s is cluster-scoped or unknown: children live in their parent's namespace", u.GroupKind)
		}
		if msg == "" {
			out = append(out, u)
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s: %s", u.Pos, u.Path, msg))
	}
	return out, errors.Join(errs...)
}
