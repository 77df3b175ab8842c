package crdgen

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// A Bound is one bound of a spec schema that the API server enforces, with
// the value that puts its field at the limit: a number at its maximum, a
// string of its longest length, a list or map of the most items, each item
// at its own limits. What the API server accepts at the limits, render
// must take within its budget; `cueop vet` tries each.
type Bound struct {
	// Path is the field, "spec.line".
	Path string
	// Limit is the bound as written in CUE: "<=1000000",
	// "strings.MaxRunes(1000000)", "list.MaxItems(2000)",
	// "struct.MaxFields(64)".
	Limit string
	// Value puts the field at the limit.
	Value any
}

func (b Bound) String() string { return b.Path + " at " + b.Limit }

// Bounds lists the bounds of spec, a CRD's spec schema, sorted by path:
// the fields within objects (nested objects included) that have a
// maximum, a maximum length, a most items or a most properties. Bounds
// within list items and map values are not listed apart: they are at their
// limit in the value of the list or map.
func Bounds(spec apiextensionsv1.JSONSchemaProps) []Bound {
	var out []Bound
	collectBounds(spec, "spec", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func collectBounds(s apiextensionsv1.JSONSchemaProps, path string, out *[]Bound) {
	for name, p := range s.Properties {
		sub := path + "." + name
		if limit := limitOf(p); limit != "" {
			*out = append(*out, Bound{Path: sub, Limit: limit, Value: AtLimits(p, 0)})
			continue
		}
		if p.Type == "object" {
			collectBounds(p, sub, out)
		}
	}
}

// limitOf names the bound of s, or "" for a field without one.
func limitOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case len(s.Enum) > 0:
		return ""
	case (s.Type == "integer" || s.Type == "number") && s.Maximum != nil:
		op := "<="
		if s.ExclusiveMaximum {
			op = "<"
		}
		return op + strconv.FormatFloat(*s.Maximum, 'f', -1, 64)
	case s.Type == "string" && s.MaxLength != nil:
		return fmt.Sprintf("strings.MaxRunes(%d)", *s.MaxLength)
	case s.Type == "array" && s.MaxItems != nil:
		return fmt.Sprintf("list.MaxItems(%d)", *s.MaxItems)
	case s.Type == "object" && s.MaxProperties != nil:
		return fmt.Sprintf("struct.MaxFields(%d)", *s.MaxProperties)
	}
	return ""
}

// AtLimits returns a value of s with every bound at its limit, recursively;
// fields without a bound get their smallest valid value (Minimal). i makes
// the items of one list differ (a list of unique items).
func AtLimits(s apiextensionsv1.JSONSchemaProps, i int) any {
	switch {
	case limitOf(s) == "":
		if s.Type == "object" && len(s.Properties) > 0 {
			return objectOf(s, true, i)
		}
		return Minimal(s, i)
	case s.Type == "integer":
		n := int64(*s.Maximum)
		if s.ExclusiveMaximum {
			n--
		}
		return n
	case s.Type == "number":
		return *s.Maximum
	case s.Type == "string":
		return distinct(i, int(*s.MaxLength))
	case s.Type == "array":
		l := make([]any, *s.MaxItems)
		for j := range l {
			l[j] = AtLimits(*s.Items.Schema, j)
		}
		return l
	}
	m := objectOf(s, true, i)
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		for j := int64(len(m)); j < *s.MaxProperties; j++ {
			m[distinct(int(j), 8)] = AtLimits(*s.AdditionalProperties.Schema, int(j))
		}
	}
	return m
}

// Minimal returns the smallest valid value of s that it can tell: the
// default, the first enum value, the minimum (or 0), the shortest string,
// the fewest items, the required properties.
func Minimal(s apiextensionsv1.JSONSchemaProps, i int) any {
	// Decoded as the API server decodes a CR (a whole number an int64),
	// so that the sample is the spec a CR holds: a default of 1 for an
	// int is 1, not the float 1.0 an int field refuses.
	var v any
	if s.Default != nil && utiljson.Unmarshal(s.Default.Raw, &v) == nil {
		return v
	}
	if len(s.Enum) > 0 && utiljson.Unmarshal(s.Enum[0].Raw, &v) == nil {
		return v
	}
	switch s.Type {
	case "integer", "number":
		n := int64(i)
		if s.Minimum != nil {
			n += int64(*s.Minimum)
			if s.ExclusiveMinimum {
				n++
			}
		}
		if s.Maximum != nil && float64(n) > *s.Maximum {
			n = int64(*s.Maximum)
		}
		return n
	case "string":
		n := int64(1)
		if s.MinLength != nil {
			n = max(n, *s.MinLength)
		}
		return distinct(i, int(n))
	case "boolean":
		return false
	case "array":
		n := int64(0)
		if s.MinItems != nil {
			n = *s.MinItems
		}
		l := make([]any, n)
		for j := range l {
			l[j] = Minimal(*s.Items.Schema, j)
		}
		return l
	case "object":
		return objectOf(s, false, i)
	}
	return nil
}

// objectOf fills the required properties of s (at their limits or
// minimal), and at their limits those with a bound within.
func objectOf(s apiextensionsv1.JSONSchemaProps, atLimits bool, i int) map[string]any {
	m := map[string]any{}
	for _, name := range s.Required {
		if atLimits {
			m[name] = AtLimits(s.Properties[name], i)
		} else {
			m[name] = Minimal(s.Properties[name], i)
		}
	}
	for name, p := range s.Properties {
		if atLimits && hasBound(p) {
			m[name] = AtLimits(p, i)
		}
	}
	return m
}

// hasBound tells whether s or a field within it has a bound.
func hasBound(s apiextensionsv1.JSONSchemaProps) bool {
	if limitOf(s) != "" {
		return true
	}
	for _, p := range s.Properties {
		if hasBound(p) {
			return true
		}
	}
	return false
}

// distinct is a string of n letters, a different one for each i (as far as
// n letters allow): a name, a label value and a host name take it.
func distinct(i, n int) string {
	var b strings.Builder
	for ; i > 0 && b.Len() < n; i /= 26 {
		b.WriteByte(byte('a' + i%26))
	}
	return b.String() + strings.Repeat("a", n-b.Len())
}
