package crdgen

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// disjunction maps `a | b | c`. Null alternatives are the caller's business
// (nullable) and alternatives that another one subsumes are dropped
// (`"a" | string` is string). What is left must be
//   - concrete scalars only: an enum (`"a" | "b"`);
//   - alternatives of one JSON type: anyOf of their validations, or none
//     when one alternative is unconstrained (`>5 | <1`, `"a" | =~"^x-"`);
//   - integer and string alternatives (x-kubernetes-int-or-string): the
//     validations of each side, which must apply to their own type only
//     (`int & >=0 | =~"%$"`, `int | "auto"`).
func (w *walker) disjunction(args []cue.Value, l loc) (*facts, error) {
	alts, err := flatten(args, l)
	if err != nil {
		return nil, err
	}
	alts = simplify(slices.DeleteFunc(alts, cue.Value.IsNull))
	switch {
	case len(alts) == 0:
		return &facts{}, nil
	case len(alts) == 1:
		return w.constraints(alts[0], l.expr())
	case !slices.ContainsFunc(alts, func(v cue.Value) bool { return !isScalarLiteral(v) }):
		return w.sameType(alts, l)
	}
	groups := map[jsonType][]cue.Value{}
	for _, a := range alts {
		t := typeOf(a.IncompleteKind())
		groups[t] = append(groups[t], a)
	}
	switch {
	case len(groups) == 1 && groups[typeObject] == nil && groups[typeArray] == nil && groups[typeOther] == nil:
		return w.sameType(alts, l)
	case len(groups) == 2 && groups[typeNumber] != nil && groups[typeString] != nil:
		return w.intOrString(groups[typeNumber], groups[typeString], l)
	}
	return nil, l.errorf(alts[0], "disjunction %v cannot be expressed in a structural schema "+
		"(supported: alternatives of one scalar type, int | string, and null | T)", describe(alts))
}

// sameType maps alternatives of one JSON type: enums merge into one enum,
// constrained alternatives into anyOf; an unconstrained alternative makes
// the whole disjunction unconstrained.
func (w *walker) sameType(alts []cue.Value, l loc) (*facts, error) {
	enum := &facts{}
	var branches []*facts
	for _, a := range alts {
		f, err := w.constraints(a, l.expr())
		switch {
		case err != nil:
			return nil, err
		case f.empty():
			return f, nil
		case f.onlyEnum():
			enum.addEnum(f.enum...)
		default:
			branches = append(branches, f)
		}
	}
	if enum.hasEnum {
		branches = append([]*facts{enum}, branches...)
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	anyOf := make([]apiextensionsv1.JSONSchemaProps, len(branches))
	for i, b := range branches {
		anyOf[i] = b.props()
	}
	return &facts{anyOfs: [][]apiextensionsv1.JSONSchemaProps{anyOf}}, nil
}

// intOrString merges the validations of the integer and the string side of
// an int-or-string disjunction. JSON Schema applies minimum to numbers and
// pattern to strings only, so the merged validations check each side alone;
// an enum would not (it applies to both), so string literals become a
// pattern and number literals are refused.
func (w *walker) intOrString(nums, strs []cue.Value, l loc) (*facts, error) {
	n, err := w.sameType(nums, l)
	if err != nil {
		return nil, err
	}
	s, err := w.sameType(strs, l)
	if err != nil {
		return nil, err
	}
	if s.onlyEnum() {
		s = literalPattern(s.enum)
	}
	if !n.kindSpecific() || !s.kindSpecific() {
		return nil, l.errorf(nums[0], "disjunction %v: with int | string only bounds on the "+
			"integer side and patterns, lengths or string literals on the string side can be expressed",
			describe(append(nums, strs...)))
	}
	n.and(s)
	return n, nil
}

// literalPattern turns an enum of strings into the pattern matching exactly
// those strings.
func literalPattern(enum []apiextensionsv1.JSON) *facts {
	quoted := make([]string, 0, len(enum))
	for _, e := range enum {
		var s string
		if json.Unmarshal(e.Raw, &s) == nil {
			quoted = append(quoted, regexp.QuoteMeta(s))
		}
	}
	return &facts{patterns: []string{"^(?:" + strings.Join(quoted, "|") + ")$"}}
}

// flatten expands alternatives that are themselves disjunctions, directly
// or through a reference (`#Enum | "c"`).
func flatten(args []cue.Value, l loc) ([]cue.Value, error) {
	var out []cue.Value
	for _, a := range args {
		if err := l.checkDepth(a); err != nil {
			return nil, err
		}
		inner, ok := alternatives(a)
		if !ok {
			out = append(out, a)
			continue
		}
		more, err := flatten(inner, l.expr())
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// alternatives returns the alternatives of v when v is a disjunction, a
// reference to a value, or what is left of a disjunction once CUE dropped
// a default that another alternative subsumes.
func alternatives(v cue.Value) ([]cue.Value, bool) {
	op, args := v.Expr()
	switch {
	case op == cue.OrOp:
		return args, true
	case op == cue.NoOp && len(args) == 1 && args[0] != v:
		return args, true
	case op == cue.SelectorOp:
		if t, ok := resolve(v); ok {
			return []cue.Value{t}, true
		}
	}
	return nil, false
}

// resolve returns the value a reference names.
func resolve(v cue.Value) (cue.Value, bool) {
	root, path := v.ReferencePath()
	if !root.Exists() {
		return cue.Value{}, false
	}
	t := root.LookupPath(path)
	return t, t.Exists()
}

// simplify drops alternatives that another alternative subsumes, keeping
// the order of the rest.
func simplify(alts []cue.Value) []cue.Value {
	var out []cue.Value
	for _, a := range alts {
		if slices.ContainsFunc(out, func(o cue.Value) bool { return o.Subsume(a) == nil }) {
			continue
		}
		out = slices.DeleteFunc(out, func(o cue.Value) bool { return a.Subsume(o) == nil })
		out = append(out, a)
	}
	return out
}

func describe(alts []cue.Value) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = formatValue(a)
	}
	return strings.Join(parts, " | ")
}
