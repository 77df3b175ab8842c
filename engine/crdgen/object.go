package crdgen

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// object maps a struct: its regular, optional (`?`) and required (`!`)
// fields become properties; `[string]: T` becomes additionalProperties;
// `...` (or `[string]: _`) becomes x-kubernetes-preserve-unknown-fields.
// Structs are closed otherwise: #Spec is a definition, so CUE closes them
// too.
func (w *walker) object(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	base, err := w.base(v, l)
	if err != nil {
		if alts, ok := structAlternatives(v, l); ok {
			return w.oneOf(s, alts, l)
		}
		return err
	}
	s.Type = "object"
	if err := w.properties(s, base, l); err != nil {
		return err
	}
	if err := w.conditionalProperties(s, base, l); err != nil {
		return err
	}
	fieldCounts(s, v)
	return w.additional(s, base, l)
}

// fieldCounts maps struct.MinFields(n) and struct.MaxFields(n), conjuncts
// of v, to minProperties and maxProperties: both count the regular fields.
func fieldCounts(s *apiextensionsv1.JSONSchemaProps, v cue.Value) {
	op, args := v.Expr()
	if op != cue.AndOp {
		return
	}
	for _, a := range args {
		op, call := a.Expr()
		if op == cue.AndOp {
			fieldCounts(s, a)
		}
		if op != cue.CallOp || len(call) != 2 {
			continue
		}
		n, err := call[1].Int64()
		if err != nil || n < 0 {
			continue
		}
		switch strings.TrimSuffix(fmt.Sprint(call[0]), "()") {
		case "struct.MinFields":
			s.MinProperties = &n
		case "struct.MaxFields":
			s.MaxProperties = &n
		}
	}
}

// conditionalProperties adds the fields that exist under a condition
// (`if exposure == "NodePort" {nodePort!: int}`), neither required nor
// defaulted: CEL rules (specRules) require or refuse them by the condition.
func (w *walker) conditionalProperties(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	for _, c := range conditionals(v) {
		if _, ok := s.Properties[c.name]; ok {
			continue
		}
		p, err := w.field(c.value, optionalField, l.field(c.name, c.value))
		if err != nil {
			return err
		}
		if s.Properties == nil {
			s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		s.Properties[c.name] = *p
	}
	return nil
}

func (w *walker) properties(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	it, err := v.Fields(cue.Optional(true), cue.Definitions(false), cue.Hidden(false), cue.Patterns(true))
	if err != nil {
		return l.wrap(v, err, "struct")
	}
	for it.Next() {
		sel, fv := it.Selector(), it.Value()
		if sel.ConstraintType() == cue.PatternConstraint {
			if err := w.checkPattern(sel, fv, l); err != nil {
				return err
			}
			continue
		}
		name, mode := sel.Unquoted(), modeOf(sel)
		p, err := w.field(fv, mode, l.field(name, fv))
		if err != nil {
			return err
		}
		if s.Properties == nil {
			s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		s.Properties[name] = *p
		if mode == requiredField || mode == regularField && !concrete(fv) {
			s.Required = append(s.Required, name)
		}
	}
	slices.Sort(s.Required)
	return nil
}

// checkPattern accepts the pattern constraints a structural schema can
// express: those on every field name, `[string]: T`.
func (w *walker) checkPattern(sel cue.Selector, v cue.Value, l loc) error {
	if w.acceptsAll(sel.Pattern(), cue.StringKind) {
		return nil
	}
	return l.errorf(v, "pattern constraint [%s] cannot be expressed in a structural schema; "+
		"only [string]: T (a map) can", formatValue(sel.Pattern()))
}

// additional maps what the struct allows beyond its fields.
func (w *walker) additional(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	pv := v.LookupPath(cue.MakePath(cue.AnyString))
	if !pv.Exists() {
		return nil
	}
	ps, err := w.field(pv, elementField, l.mapValue(pv))
	if err != nil {
		return err
	}
	if isAny(ps) {
		s.XPreserveUnknownFields = ptr(true)
		return nil
	}
	if len(s.Properties) > 0 {
		return l.errorf(v, "a struct with both fields and [string]: T cannot be expressed in a "+
			"structural schema; move the map into a field of its own")
	}
	s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: ps}
	return nil
}

// isAny reports whether s is the schema of `_`.
func isAny(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && s.Type == ""
}

// base returns the value whose fields or elements describe v: v itself
// or, when v is a disjunction with null or with a default that another
// alternative subsumes (`*["a"] | [...string]`), the alternative that
// carries the structure. Disjunctions of several structs or lists are
// refused.
func (w *walker) base(v cue.Value, l loc) (cue.Value, error) {
	if err := l.checkDepth(v); err != nil {
		return v, err
	}
	op, args := v.Expr()
	switch {
	case op == cue.OrOp:
		return w.baseAlternative(v, args, l)
	case op == cue.NoOp && len(args) == 1 && args[0] != v:
		return w.base(args[0], l.expr())
	case op == cue.SelectorOp:
		t, ok := resolve(v)
		if !ok {
			return v, nil
		}
		tb, err := w.base(t, l.expr())
		if err != nil || tb == t {
			// A plain reference: v is the same value, evaluated in place.
			return v, err
		}
		return tb, nil
	case op == cue.AndOp && v.Err() != nil:
		if u, ok := withoutValidators(args); ok {
			return w.base(u, l.expr())
		}
	}
	return v, nil
}

func (w *walker) baseAlternative(v cue.Value, args []cue.Value, l loc) (cue.Value, error) {
	alts, err := flatten(args, l)
	if err != nil {
		return v, err
	}
	alts = simplify(slices.DeleteFunc(alts, cue.Value.IsNull))
	if len(alts) != 1 {
		return v, l.errorf(v, "disjunction %s cannot be expressed in a structural schema; "+
			"use one struct with optional fields instead", describe(alts))
	}
	return w.base(alts[0], l.expr())
}

// withoutValidators unifies the conjuncts that are not validator calls: the
// structure of `[...string] & list.MinItems(1)`, whose evaluated value is an
// incomplete error until the list has an element.
func withoutValidators(args []cue.Value) (cue.Value, bool) {
	var u cue.Value
	found := false
	for _, a := range args {
		if op, _ := a.Expr(); op == cue.CallOp {
			continue
		}
		if !found {
			u, found = a, true
			continue
		}
		u = u.Unify(a)
	}
	return u, found
}
