package crdgen

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

// Constraint is one constraint of #Spec that an OpenAPI schema cannot hold:
// a comparison between fields, list.UniqueItems, an immutable field. Rule
// is the CEL rule that enforces it at admission (x-kubernetes-validations
// on the schema node At); a constraint without a Rule is enforced only when
// the resource is rendered, for the Reason given.
type Constraint struct {
	// Field is the CR field path the constraint is on: spec.minReady.
	Field string
	// What describes the constraint: "spec.minReady <= spec.replicas".
	What string
	// Pos is the constraint's position in the template.
	Pos token.Pos
	// At is the CR field path of the schema node that carries Rule.
	At string
	// Rule and Message are the x-kubernetes-validations entry; Rule is
	// empty for a constraint left to render.
	Rule, Message string
	// Reason says why a constraint is left to render.
	Reason string

	node      []string // schema path of At below .spec: field names, itemsSeg, mapSeg
	fieldPath string   // the rule's fieldPath, relative to At
}

// Admission reports whether the API server enforces c.
func (c Constraint) Admission() bool { return c.Rule != "" }

func (c Constraint) String() string {
	s := c.What
	if c.Pos.IsValid() {
		s += " (" + template.ShortPos(c.Pos) + ")"
	}
	if c.Admission() {
		return s + ": CEL rule on " + c.At + ": " + c.Rule
	}
	return s + ": render only: " + c.Reason
}

const (
	itemsSeg = "[_]"
	mapSeg   = "[string]"
)

// ImmutableAttr is the attribute that marks a #Spec field immutable:
// `image: string @cueop(immutable)`.
const ImmutableAttr = template.ImmutableAttr

// celWalker collects the constraints of #Spec that become CEL rules. It
// walks the structure of #Spec as the schema walker does, and in each
// field's expression tree finds bounds by other fields (`<=replicas`),
// list.UniqueItems and the @cueop(immutable) attribute.
type celWalker struct {
	spec     cue.Value
	specSels []cue.Selector
	// optional records, by path below .spec, the fields that may be absent
	// after the API server's defaulting: optional fields.
	optional map[string]bool
	// defaulted records the fields that have a default. They are present
	// in a resource, but the API server also checks the rules against
	// the default of their struct, `{}`, before its fields' defaults.
	defaulted map[string]bool
	pending   []relation
	out       []Constraint
	err       error // the first misspelt @cueop attribute
}

// relation is a comparison between field from and field to: from op to.
type relation struct {
	from, to []string
	op       cue.Op
	pos      token.Pos
	// size compares the length of from (strings.MaxRunes(n), list.MaxItems(n)).
	size bool
	// orEqual is the JSON of a default that is an alternative of its own
	// (`*5 | int & >lo`): CUE accepts it whatever the bound.
	orEqual string
}

// specRules returns the constraints of spec (#Spec) beyond its OpenAPI
// schema and adds the rules of those that have one to s, the schema of
// .spec.
func specRules(spec cue.Value, s *apiextensionsv1.JSONSchemaProps) ([]Constraint, error) {
	c := &celWalker{spec: spec, specSels: spec.Path().Selectors(), optional: map[string]bool{}, defaulted: map[string]bool{}}
	c.walk(spec, nil, 0)
	if c.err != nil {
		return nil, c.err
	}
	for _, r := range c.pending {
		c.out = append(c.out, c.compare(r))
	}
	slices.SortStableFunc(c.out, func(a, b Constraint) int { return a.Pos.Compare(b.Pos) })
	for i, con := range c.out {
		if con.Rule == "" {
			continue
		}
		rule := apiextensionsv1.ValidationRule{Rule: con.Rule, Message: con.Message, FieldPath: con.fieldPath}
		if strings.Contains(con.Rule, "oldSelf") {
			rule.Reason = ptr(apiextensionsv1.FieldValueForbidden)
		}
		if !addRule(s, con.node, rule) {
			c.out[i].Rule, c.out[i].Message = "", ""
			c.out[i].Reason = "its schema node does not exist"
		}
	}
	return c.out, nil
}

// walk visits the fields, list elements and map values of v, at path.
func (c *celWalker) walk(v cue.Value, path []string, depth int) {
	if depth > maxDepth {
		return
	}
	base, err := newWalker(v).base(v, rootLoc(v, ""))
	if err != nil {
		if alts, ok := structAlternatives(v, rootLoc(v, "")); ok {
			c.out = append(c.out, oneOfRule(v, alts, path))
		}
		return
	}
	switch kindOf(v) &^ cue.NullKind {
	case cue.StructKind:
		it, err := base.Fields(cue.Optional(true), cue.Definitions(false), cue.Hidden(false))
		if err != nil {
			return
		}
		for it.Next() {
			sel, fv := it.Selector(), it.Value()
			fp := append(slices.Clone(path), sel.Unquoted())
			switch mode := modeOf(sel); {
			case mode == optionalField:
				c.optional[strings.Join(fp, ".")] = true
			case mode == regularField && concrete(fv):
				c.defaulted[strings.Join(fp, ".")] = true
			}
			c.field(fv, fp, modeOf(sel))
			c.walk(fv, fp, depth+1)
		}
		for _, cf := range conditionals(base) {
			fp := append(slices.Clone(path), cf.name)
			c.optional[strings.Join(fp, ".")] = true
			c.out = append(c.out, c.conditional(cf, path))
			c.field(cf.value, fp, optionalField)
			c.walk(cf.value, fp, depth+1)
		}
		if pv := base.LookupPath(cue.MakePath(cue.AnyString)); pv.Exists() {
			mp := append(slices.Clone(path), mapSeg)
			c.expr(pv, mp, "", 0)
			c.walk(pv, mp, depth+1)
		}
	case cue.ListKind:
		if ev := base.LookupPath(cue.MakePath(cue.AnyIndex)); ev.Exists() {
			ip := append(slices.Clone(path), itemsSeg)
			c.expr(ev, ip, "", 0)
			c.walk(ev, ip, depth+1)
		}
	}
}

// field collects the constraints of one field.
func (c *celWalker) field(v cue.Value, path []string, mode fieldMode) {
	if a := v.Attribute("cueop"); a.Err() == nil {
		for i := range a.NumArgs() {
			if key, value := a.Arg(i); key != ImmutableAttr || value != "" {
				if c.err == nil {
					c.err = &SchemaError{Field: "#Spec." + strings.Join(path, "."), Pos: v.Pos(),
						Message: fmt.Sprintf("@cueop(%s): unknown attribute argument %q (supported: %s)", a.Contents(), key, ImmutableAttr)}
				}
				return
			}
		}
		if a.NumArgs() > 0 {
			c.out = append(c.out, c.immutable(v, path, mode))
		}
	}
	c.expr(v, path, defaultAlternative(v), 0)
}

// expr walks the expression tree of v, the value of the field at path.
// Disjunctions are not entered: a bound by another field in one
// alternative cannot be told apart from the others in a rule of its own.
func (c *celWalker) expr(v cue.Value, path []string, orEqual string, depth int) {
	if depth > maxExprDepth {
		return
	}
	op, args := v.Expr()
	switch op {
	case cue.AndOp:
		for _, a := range args {
			c.expr(a, path, orEqual, depth+1)
		}
	case cue.NoOp:
		if len(args) == 1 && args[0] != v {
			c.expr(args[0], path, orEqual, depth+1)
		}
	case cue.OrOp:
		if b, ok := fieldBound(v, 0); ok {
			c.out = append(c.out, Constraint{
				Field: crPath(path), Pos: b.Pos(), What: crPath(path) + " " + formatValue(b),
				Reason: "a bound by another field within a disjunction is not translated to CEL",
			})
		}
	case cue.GreaterThanOp, cue.GreaterThanEqualOp, cue.LessThanOp, cue.LessThanEqualOp, cue.NotEqualOp:
		if len(args) == 1 && !args[0].IsConcrete() {
			c.bound(v, op, args[0], path, orEqual)
		}
	case cue.CallOp:
		name := ""
		if len(args) > 0 {
			name = strings.TrimSuffix(fmt.Sprint(args[0]), "()")
		}
		switch {
		case len(args) == 1 && name == "list.UniqueItems":
			c.out = append(c.out, c.unique(v, path))
		case len(args) == 2 && countOps[name] != 0 && !args[1].IsConcrete():
			c.count(v, countOps[name], args[1], path)
		}
	}
}

// countOps are the validators that bound a length, and how.
var countOps = map[string]cue.Op{
	"strings.MinRunes": cue.GreaterThanEqualOp, "strings.MaxRunes": cue.LessThanEqualOp,
	"list.MinItems": cue.GreaterThanEqualOp, "list.MaxItems": cue.LessThanEqualOp,
}

// count records a length bound by another field: strings.MaxRunes(maxLen).
func (c *celWalker) count(v cue.Value, op cue.Op, ref cue.Value, path []string) {
	to, ok := c.specPath(ref)
	if !ok || slices.Contains(path, itemsSeg) || slices.Contains(path, mapSeg) ||
		slices.Contains(to, itemsSeg) || slices.Contains(to, mapSeg) {
		c.out = append(c.out, Constraint{
			Field: crPath(path), Pos: v.Pos(), What: crPath(path) + " " + formatValue(v),
			Reason: "a length bound by a value that is not a field of #Spec outside lists and maps is not translated to CEL",
		})
		return
	}
	c.pending = append(c.pending, relation{from: path, to: to, op: op, pos: v.Pos(), size: true})
}

// fieldBound returns a bound by a value that is not concrete (another
// field) within v's expression tree.
func fieldBound(v cue.Value, depth int) (cue.Value, bool) {
	if depth > maxExprDepth {
		return cue.Value{}, false
	}
	op, args := v.Expr()
	switch op {
	case cue.GreaterThanOp, cue.GreaterThanEqualOp, cue.LessThanOp, cue.LessThanEqualOp, cue.NotEqualOp:
		return v, len(args) == 1 && !args[0].IsConcrete()
	case cue.AndOp, cue.OrOp:
	case cue.NoOp:
		if len(args) != 1 || args[0] == v {
			return cue.Value{}, false
		}
	default:
		return cue.Value{}, false
	}
	for _, a := range args {
		if b, ok := fieldBound(a, depth+1); ok {
			return b, true
		}
	}
	return cue.Value{}, false
}

// defaultAlternative returns, as JSON, the default of a field written as
// an alternative of its own (`*5 | int & >lo`), which CUE accepts whatever
// the other alternatives say; "" when there is none. The evaluated value
// hides it: CUE drops a default that the rest subsumes for the defaults of
// the fields it refers to.
func defaultAlternative(v cue.Value) string {
	f, ok := v.Source().(*ast.Field)
	if !ok {
		return ""
	}
	lit := starredLiteral(f.Value)
	if lit == nil {
		return ""
	}
	d := v.Context().BuildExpr(lit)
	b, err := d.MarshalJSON()
	if err != nil || !d.IsConcrete() {
		return ""
	}
	return string(b)
}

func starredLiteral(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return starredLiteral(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.OR {
			return nil
		}
		if l := starredLiteral(e.X); l != nil {
			return l
		}
		return starredLiteral(e.Y)
	case *ast.UnaryExpr:
		if lit, ok := e.X.(*ast.BasicLit); ok && e.Op == token.MUL {
			return lit
		}
	}
	return nil
}

// bound records `op ref`, a bound by another field of #Spec.
func (c *celWalker) bound(v cue.Value, op cue.Op, ref cue.Value, path []string, orEqual string) {
	con := Constraint{Field: crPath(path), Pos: v.Pos(), What: fmt.Sprintf("%s %v %s", crPath(path), op, formatValue(ref))}
	to, ok := c.specPath(ref)
	switch {
	case !ok:
		if root, p := ref.ReferencePath(); root.Exists() {
			con.What = fmt.Sprintf("%s %v %s", crPath(path), op, p)
		}
		con.Reason = "the bound is not a field of #Spec"
	case slices.Contains(path, itemsSeg) || slices.Contains(path, mapSeg) || slices.Contains(to, itemsSeg) || slices.Contains(to, mapSeg):
		con.What = fmt.Sprintf("%s %v %s", crPath(path), op, crPath(to))
		con.Reason = "bounds by other fields within lists or maps are not translated to CEL"
	default:
		c.pending = append(c.pending, relation{from: path, to: to, op: op, pos: v.Pos(), orEqual: orEqual})
		return
	}
	c.out = append(c.out, con)
}

// specPath returns the path below #Spec of the field ref refers to.
func (c *celWalker) specPath(ref cue.Value) ([]string, bool) {
	op, _ := ref.Expr()
	if op != cue.SelectorOp {
		return nil, false
	}
	root, p := ref.ReferencePath()
	if !root.Exists() {
		return nil, false
	}
	sels := p.Selectors()
	if len(sels) <= len(c.specSels) {
		return nil, false
	}
	for i, s := range c.specSels {
		if s.String() != sels[i].String() {
			return nil, false
		}
	}
	var out []string
	for _, s := range sels[len(c.specSels):] {
		if s.LabelType() != cue.StringLabel {
			return nil, false
		}
		out = append(out, s.Unquoted())
	}
	return out, true
}

// compare turns a relation into a rule on the nearest common parent of its
// fields. A bound applies when its field is present; CUE refuses a bound
// by an optional field that is absent, so the rule requires that field.
func (c *celWalker) compare(r relation) Constraint {
	common := 0
	for common < len(r.from)-1 && common < len(r.to)-1 && r.from[common] == r.to[common] {
		common++
	}
	from, to := crPath(r.from), crPath(r.to)
	con := Constraint{
		Field: from, Pos: r.pos,
		What: fmt.Sprintf("%s %v %s", from, r.op, to),
		At:   crPath(r.from[:common]), node: r.from[:common],
	}
	fromExpr, err1 := celPath(r.from[common:])
	toExpr, err2 := celPath(r.to[common:])
	if err := cmpErr(err1, err2); err != nil {
		con.Reason = err.Error()
		return con
	}
	fromHas := c.presence(r.from, common, true)
	toHas := c.presence(r.to, common, false)
	cmp := fmt.Sprintf("%s %v %s", fromExpr, r.op, toExpr)
	con.Message = fmt.Sprintf("%s must be %s %s", from, opWords[r.op], to)
	if r.size {
		con.What = fmt.Sprintf("len(%s) %v %s", from, r.op, to)
		cmp = fmt.Sprintf("size(%s) %v %s", fromExpr, r.op, toExpr)
		con.Message = fmt.Sprintf("the length of %s must be %s %s", from, opWords[r.op], to)
	}
	if r.orEqual != "" {
		cmp = fmt.Sprintf("%s == %s || %s", fromExpr, r.orEqual, cmp)
		con.Message = fmt.Sprintf("%s must be %s or %s %s", from, r.orEqual, opWords[r.op], to)
	}
	if len(toHas) > 0 {
		cmp = strings.Join(append(toHas, cmp), " && ")
		con.Message = fmt.Sprintf("%s requires %s and must be %s it", from, to, opWords[r.op])
	}
	switch {
	case len(fromHas) == 1:
		cmp = "!" + fromHas[0] + " || " + parenthesize(cmp, len(toHas) > 0)
	case len(fromHas) > 1:
		cmp = "!(" + strings.Join(fromHas, " && ") + ") || " + parenthesize(cmp, len(toHas) > 0)
	}
	con.Rule, con.fieldPath = cmp, fieldPath(r.from[common:])
	return con
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func parenthesize(s string, yes bool) string {
	if yes {
		return "(" + s + ")"
	}
	return s
}

var opWords = map[cue.Op]string{
	cue.LessThanOp:         "less than",
	cue.LessThanEqualOp:    "at most",
	cue.GreaterThanOp:      "greater than",
	cue.GreaterThanEqualOp: "at least",
	cue.NotEqualOp:         "different from",
}

// presence returns the has() tests of the optional fields on path below
// its first skip elements, outermost first; of the defaulted ones too when
// defaulted is set.
func (c *celWalker) presence(path []string, skip int, defaulted bool) []string {
	var out []string
	for i := skip + 1; i <= len(path); i++ {
		key := strings.Join(path[:i], ".")
		if c.optional[key] || defaulted && c.defaulted[key] {
			p, _ := celPath(path[skip:i])
			out = append(out, "has("+p+")")
		}
	}
	return out
}

// conditional maps a field that exists under a condition on a sibling: a
// required one must be there exactly when the condition holds, another one
// may be there only then (CUE's closed struct refuses it otherwise).
func (c *celWalker) conditional(cf conditional, parent []string) Constraint {
	on := append(slices.Clone(parent), cf.on)
	field := append(slices.Clone(parent), cf.name)
	lit, _ := cf.equal.MarshalJSON()
	con := Constraint{
		Field: crPath(field), Pos: cf.pos,
		What: fmt.Sprintf("%s only if %s == %s", crPath(field), crPath(on), lit),
		At:   crPath(parent), node: parent, fieldPath: fieldPath([]string{cf.name}),
	}
	onExpr, err1 := celPath([]string{cf.on})
	fieldExpr, err2 := celPath([]string{cf.name})
	if err := cmpErr(err1, err2); err != nil {
		con.Reason = err.Error()
		return con
	}
	cond := fmt.Sprintf("%s == %s", onExpr, lit)
	key := strings.Join(on, ".")
	if c.optional[key] || c.defaulted[key] {
		cond = fmt.Sprintf("(has(%s) && %s)", onExpr, cond)
	}
	if cf.mode == requiredField || cf.mode == regularField && !concrete(cf.value) {
		con.What = fmt.Sprintf("%s required if and only if %s == %s", crPath(field), crPath(on), lit)
		con.Rule = fmt.Sprintf("(%s) == has(%s)", strings.TrimSuffix(strings.TrimPrefix(cond, "("), ")"), fieldExpr)
		con.Message = fmt.Sprintf("%s is required when %s is %s, and not allowed otherwise", crPath(field), crPath(on), lit)
		return con
	}
	con.Rule = fmt.Sprintf("%s || !has(%s)", cond, fieldExpr)
	con.Message = fmt.Sprintf("%s is allowed only when %s is %s", crPath(field), crPath(on), lit)
	return con
}

// unique maps list.UniqueItems to a rule on the list.
func (c *celWalker) unique(v cue.Value, path []string) Constraint {
	return Constraint{
		Field: crPath(path), Pos: v.Pos(), What: crPath(path) + " & list.UniqueItems()",
		At: crPath(path), node: path,
		Rule:    "self.all(x, self.exists_one(y, y == x))",
		Message: crPath(path) + " must not contain duplicate items",
	}
}

// immutable maps @cueop(immutable): a field that is always present (it is
// required or has a default) gets `self == oldSelf`; an optional one gets
// a rule on its parent, so that setting or removing it is refused too.
func (c *celWalker) immutable(v cue.Value, path []string, mode fieldMode) Constraint {
	con := Constraint{
		Field: crPath(path), Pos: v.Pos(), What: crPath(path) + " @cueop(immutable)",
		Message: crPath(path) + " is immutable",
	}
	if slices.Contains(path, itemsSeg) || slices.Contains(path, mapSeg) {
		con.Reason = "immutable fields within lists or maps are not supported"
		return con
	}
	if mode != optionalField {
		con.At, con.node, con.Rule = crPath(path), path, "self == oldSelf"
		return con
	}
	parent := path[:len(path)-1]
	p, err := celPath(path[len(path)-1:])
	if err != nil {
		con.Reason = err.Error()
		return con
	}
	h := "has(" + p + ")"
	con.At, con.node, con.fieldPath = crPath(parent), parent, fieldPath(path[len(path)-1:])
	con.Rule = fmt.Sprintf("%s == %s && (!%s || %s == %s)",
		strings.Replace(h, "self.", "oldSelf.", 1), h, h, p, strings.Replace(p, "self.", "oldSelf.", 1))
	return con
}

// fieldPath returns the fieldPath of a rule about the field at path below
// the rule's node, or "" when a name needs quoting.
func fieldPath(path []string) string {
	for _, p := range path {
		if !identifier.MatchString(p) {
			return ""
		}
	}
	return "." + strings.Join(path, ".")
}

// crPath returns the CR field path of a path below .spec.
func crPath(path []string) string {
	var b strings.Builder
	b.WriteString("spec")
	for _, p := range path {
		switch {
		case p == itemsSeg || p == mapSeg:
			b.WriteString(p)
		case identifier.MatchString(p):
			b.WriteString("." + p)
		default:
			fmt.Fprintf(&b, "[%q]", p)
		}
	}
	return b.String()
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celPath returns the CEL expression of the field at path below self.
// Field names are escaped as the API server escapes property names.
func celPath(path []string) (string, error) {
	var b strings.Builder
	b.WriteString("self")
	for _, p := range path {
		if p == itemsSeg || p == mapSeg {
			return "", fmt.Errorf("path crosses a list or map")
		}
		name, ok := celName(p)
		if !ok {
			return "", fmt.Errorf("field name %q cannot be used in a CEL rule", p)
		}
		b.WriteString("." + name)
	}
	return b.String(), nil
}

var celPropertyName = regexp.MustCompile(`^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$`)

// celReserved are the names the API server escapes as __name__.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true,
	"const": true, "continue": true, "else": true, "for": true, "function": true,
	"if": true, "import": true, "let": true, "loop": true, "package": true,
	"namespace": true, "return": true, "var": true, "void": true, "while": true,
}

// celName escapes a property name for CEL as the API server does
// (k8s.io/apiserver/pkg/cel.Escape).
func celName(name string) (string, bool) {
	if celReserved[name] {
		return "__" + name + "__", true
	}
	if !celPropertyName.MatchString(name) {
		return "", false
	}
	r := strings.NewReplacer("__", "__underscores__", ".", "__dot__", "-", "__dash__", "/", "__slash__")
	return r.Replace(name), true
}

// addRule appends rule to the node of s at path; false when there is no
// such node.
func addRule(s *apiextensionsv1.JSONSchemaProps, path []string, rule apiextensionsv1.ValidationRule) bool {
	n := nodeAt(s, path, func(n *apiextensionsv1.JSONSchemaProps) {
		n.XValidations = append(n.XValidations, rule)
	})
	return n
}

// nodeAt calls f with the node of s at path and writes the result back;
// false when there is no such node.
func nodeAt(s *apiextensionsv1.JSONSchemaProps, path []string, f func(*apiextensionsv1.JSONSchemaProps)) bool {
	if len(path) == 0 {
		f(s)
		return true
	}
	switch path[0] {
	case itemsSeg:
		if s.Items == nil || s.Items.Schema == nil {
			return false
		}
		return nodeAt(s.Items.Schema, path[1:], f)
	case mapSeg:
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			return false
		}
		return nodeAt(s.AdditionalProperties.Schema, path[1:], f)
	}
	p, ok := s.Properties[path[0]]
	if !ok {
		return false
	}
	found := nodeAt(&p, path[1:], f)
	s.Properties[path[0]] = p
	return found
}
