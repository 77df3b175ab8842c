package crdgen

import (
	"bytes"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// facts are the value validations collected from one CUE value's
// constraints: bounds, lengths, patterns, enums and the junctions (not,
// anyOf) that have no keyword of their own. They carry no type: the type
// comes from the value's kind.
type facts struct {
	min, max           *bound
	minLen, maxLen     *int64
	minItems, maxItems *int64
	patterns           []string
	// enum is the set of allowed values when hasEnum is set.
	enum    []apiextensionsv1.JSON
	hasEnum bool
	// format is a string format such as date-time.
	format string
	// nots are negated validations (`!=x`, `!~re`), each one `not:` schema.
	nots []apiextensionsv1.JSONSchemaProps
	// anyOfs are disjunctions of constrained alternatives, each one `anyOf:`.
	anyOfs [][]apiextensionsv1.JSONSchemaProps
}

// bound is a numeric bound; exclusive for `<` and `>`.
type bound struct {
	n         float64
	exclusive bool
}

func (f *facts) empty() bool {
	return f.min == nil && f.max == nil && f.minLen == nil && f.maxLen == nil &&
		f.minItems == nil && f.maxItems == nil && len(f.patterns) == 0 &&
		!f.hasEnum && f.format == "" && len(f.nots) == 0 && len(f.anyOfs) == 0
}

// kindSpecific reports whether every validation in f applies to one JSON
// type only and passes values of other types (minimum, pattern, not), so f
// can be merged with the validations of another kind's alternative.
func (f *facts) kindSpecific() bool {
	return !f.hasEnum && len(f.anyOfs) == 0
}

// onlyEnum reports whether f is nothing but an enum.
func (f *facts) onlyEnum() bool {
	g := *f
	g.enum, g.hasEnum = nil, false
	return f.hasEnum && g.empty()
}

// and merges g into f: the result allows what both allow.
func (f *facts) and(g *facts) {
	f.min = tighter(f.min, g.min, func(a, b float64) bool { return a > b })
	f.max = tighter(f.max, g.max, func(a, b float64) bool { return a < b })
	f.minLen = pick(f.minLen, g.minLen, func(a, b int64) bool { return a > b })
	f.maxLen = pick(f.maxLen, g.maxLen, func(a, b int64) bool { return a < b })
	f.minItems = pick(f.minItems, g.minItems, func(a, b int64) bool { return a > b })
	f.maxItems = pick(f.maxItems, g.maxItems, func(a, b int64) bool { return a < b })
	for _, p := range g.patterns {
		if !slices.Contains(f.patterns, p) {
			f.patterns = append(f.patterns, p)
		}
	}
	switch {
	case f.hasEnum && g.hasEnum:
		f.enum = intersect(f.enum, g.enum)
	case g.hasEnum:
		f.enum, f.hasEnum = g.enum, true
	}
	if g.format != "" {
		f.format = g.format
	}
	f.nots = append(f.nots, g.nots...)
	f.anyOfs = append(f.anyOfs, g.anyOfs...)
}

// tighter returns the stricter of two bounds; at equal numbers the
// exclusive one.
func tighter(a, b *bound, stricter func(x, y float64) bool) *bound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case stricter(b.n, a.n), b.n == a.n && b.exclusive:
		return b
	}
	return a
}

func pick(a, b *int64, stricter func(x, y int64) bool) *int64 {
	if a == nil || (b != nil && stricter(*b, *a)) {
		return b
	}
	return a
}

func intersect(a, b []apiextensionsv1.JSON) []apiextensionsv1.JSON {
	var out []apiextensionsv1.JSON
	for _, x := range a {
		if containsJSON(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func containsJSON(list []apiextensionsv1.JSON, x apiextensionsv1.JSON) bool {
	return slices.ContainsFunc(list, func(y apiextensionsv1.JSON) bool { return bytes.Equal(x.Raw, y.Raw) })
}

// addEnum adds values to f's enum, keeping the first of duplicates.
func (f *facts) addEnum(values ...apiextensionsv1.JSON) {
	f.hasEnum = true
	for _, x := range values {
		if !containsJSON(f.enum, x) {
			f.enum = append(f.enum, x)
		}
	}
}

// apply writes f's validations into s.
func (f *facts) apply(s *apiextensionsv1.JSONSchemaProps) {
	if f.min != nil {
		s.Minimum, s.ExclusiveMinimum = ptr(f.min.n), f.min.exclusive
	}
	if f.max != nil {
		s.Maximum, s.ExclusiveMaximum = ptr(f.max.n), f.max.exclusive
	}
	s.MinLength, s.MaxLength = f.minLen, f.maxLen
	s.MinItems, s.MaxItems = f.minItems, f.maxItems
	if f.format != "" {
		s.Format = f.format
	}
	if f.hasEnum {
		s.Enum = f.enum
	}
	f.applyJunctions(s)
}

// applyJunctions writes the first pattern, not and anyOf into their own
// keywords and every further one into allOf.
func (f *facts) applyJunctions(s *apiextensionsv1.JSONSchemaProps) {
	for i, p := range f.patterns {
		if i == 0 {
			s.Pattern = p
			continue
		}
		s.AllOf = append(s.AllOf, apiextensionsv1.JSONSchemaProps{Pattern: p})
	}
	for i := range f.nots {
		if i == 0 && len(f.nots) == 1 {
			s.Not = &f.nots[i]
			continue
		}
		s.AllOf = append(s.AllOf, apiextensionsv1.JSONSchemaProps{Not: &f.nots[i]})
	}
	for i, alts := range f.anyOfs {
		if i == 0 {
			s.AnyOf = alts
			continue
		}
		s.AllOf = append(s.AllOf, apiextensionsv1.JSONSchemaProps{AnyOf: alts})
	}
}

// props returns f as a schema without a type, for use inside a junction.
func (f *facts) props() apiextensionsv1.JSONSchemaProps {
	var s apiextensionsv1.JSONSchemaProps
	f.apply(&s)
	return s
}

func ptr[T any](v T) *T { return &v }
