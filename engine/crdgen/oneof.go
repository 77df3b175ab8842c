package crdgen

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// structAlternatives returns the alternatives of v when v is a disjunction
// of two or more structs of named fields (a one-of:
// `{git!: {...}} | {image!: string}`).
func structAlternatives(v cue.Value, l loc) ([]cue.Value, bool) {
	op, args := v.Expr()
	if op != cue.OrOp {
		return nil, false
	}
	alts, err := flatten(args, l)
	if err != nil {
		return nil, false
	}
	alts = simplify(slices.DeleteFunc(alts, cue.Value.IsNull))
	if len(alts) < 2 {
		return nil, false
	}
	for _, a := range alts {
		if kindOf(a) != cue.StructKind || a.LookupPath(cue.MakePath(cue.AnyString)).Exists() {
			return nil, false
		}
	}
	return alts, true
}

// oneOf maps a disjunction of structs: the properties of every
// alternative (a name shared by alternatives must have the same schema),
// none required and none defaulted; specRules adds the rule that the
// object matches exactly one alternative.
func (w *walker) oneOf(s *apiextensionsv1.JSONSchemaProps, alts []cue.Value, l loc) error {
	s.Type = "object"
	s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	for _, a := range alts {
		var alt apiextensionsv1.JSONSchemaProps
		if err := w.properties(&alt, a, l); err != nil {
			return err
		}
		for name, p := range alt.Properties {
			p.Default = nil
			if q, ok := s.Properties[name]; ok && !sameSchema(p, q) {
				return l.errorf(a, "disjunction %s: field %s differs between alternatives, "+
					"which a structural schema cannot express", describe(alts), name)
			}
			s.Properties[name] = p
		}
	}
	return nil
}

func sameSchema(a, b apiextensionsv1.JSONSchemaProps) bool {
	x, err1 := a.Marshal()
	y, err2 := b.Marshal()
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// oneOfRule is the rule of a disjunction of structs at path: exactly one
// alternative matches, that is has its required fields and no field that
// only other alternatives have.
func oneOfRule(v cue.Value, alts []cue.Value, path []string) Constraint {
	var all []string
	fields := make([][]string, len(alts))
	required := make([][]string, len(alts))
	for i, a := range alts {
		it, err := a.Fields(cue.Optional(true), cue.Definitions(false), cue.Hidden(false))
		if err != nil {
			continue
		}
		for it.Next() {
			sel, name := it.Selector(), it.Selector().Unquoted()
			fields[i] = append(fields[i], name)
			if m := modeOf(sel); m == requiredField || m == regularField && !concrete(it.Value()) {
				required[i] = append(required[i], name)
			}
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	con := Constraint{Field: crPath(path), Pos: v.Pos(), What: crPath(path) + " one of " + describe(alts),
		At: crPath(path), node: path}
	conds := make([]string, len(alts))
	names := make([]string, len(alts))
	for i := range alts {
		var terms []string
		for _, r := range required[i] {
			p, err := celPath([]string{r})
			if err != nil {
				con.Reason = err.Error()
				return con
			}
			terms = append(terms, "has("+p+")")
		}
		for _, other := range all {
			if slices.Contains(fields[i], other) {
				continue
			}
			p, err := celPath([]string{other})
			if err != nil {
				con.Reason = err.Error()
				return con
			}
			terms = append(terms, "!has("+p+")")
		}
		conds[i] = "true"
		if len(terms) > 0 {
			conds[i] = strings.Join(terms, " && ")
		}
		names[i] = "{" + strings.Join(fields[i], ", ") + "}"
	}
	con.Rule = fmt.Sprintf("[%s].filter(m, m).size() == 1", strings.Join(conds, ", "))
	con.Message = fmt.Sprintf("%s must have the fields of exactly one of %s", crPath(path), strings.Join(names, ", "))
	return con
}
