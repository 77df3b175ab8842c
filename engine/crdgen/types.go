package crdgen

import (
	"fmt"
	"math"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// scalarKinds are the kinds a JSON Schema scalar type can hold.
const scalarKinds = cue.NumberKind | cue.StringKind | cue.BytesKind | cue.BoolKind

// jsonType groups CUE kinds by the JSON Schema type that holds them.
type jsonType int

const (
	typeOther jsonType = iota
	typeNumber
	typeString
	typeBool
	typeBytes
	typeObject
	typeArray
)

func typeOf(k cue.Kind) jsonType {
	switch {
	case k == cue.BottomKind:
		return typeOther
	case k&^cue.NumberKind == 0:
		return typeNumber
	case k == cue.StringKind:
		return typeString
	case k == cue.BoolKind:
		return typeBool
	case k == cue.BytesKind:
		return typeBytes
	case k == cue.StructKind:
		return typeObject
	case k == cue.ListKind:
		return typeArray
	}
	return typeOther
}

// kindOf is v's incomplete kind. CUE reports bottom for a value that is an
// incomplete error, such as `[...string] & list.MinItems(1)` (the empty list
// does not satisfy the validator yet); then the kind is that of the
// conjuncts, followed through references.
func kindOf(v cue.Value) cue.Kind {
	return kindAt(v, 0)
}

func kindAt(v cue.Value, depth int) cue.Kind {
	k := v.IncompleteKind()
	if k != cue.BottomKind || depth > maxExprDepth || isFatal(v) {
		return k
	}
	op, args := v.Expr()
	switch op {
	case cue.AndOp:
		k = cue.TopKind
		for _, a := range args {
			k &= kindAt(a, depth+1)
		}
	case cue.SelectorOp:
		if t, ok := resolve(v); ok {
			k = kindAt(t, depth+1)
		}
	case cue.GreaterThanOp, cue.GreaterThanEqualOp, cue.LessThanOp, cue.LessThanEqualOp, cue.NotEqualOp:
		// A bound by a field that is not concrete yet (`>lo`): the kinds
		// the bound compares.
		if len(args) == 1 {
			if k = kindAt(args[0], depth+1); k&cue.NumberKind != 0 {
				k |= cue.NumberKind
			}
		}
	}
	return k
}

// isFatal reports whether v is an error that more data cannot fix (an
// incomplete value is not). IsConcrete is true for exactly those errors.
func isFatal(v cue.Value) bool {
	return v.Err() != nil && v.IsConcrete()
}

// scalarType sets the type (and format) of a scalar of kind k.
func scalarType(s *apiextensionsv1.JSONSchemaProps, k cue.Kind) bool {
	switch k {
	case cue.IntKind:
		s.Type = "integer"
	case cue.FloatKind, cue.NumberKind:
		s.Type = "number"
	case cue.StringKind:
		s.Type = "string"
	case cue.BoolKind:
		s.Type = "boolean"
	case cue.BytesKind:
		s.Type, s.Format = "string", "byte"
	case cue.IntKind | cue.StringKind:
		s.XIntOrString = true
	default:
		return false
	}
	return true
}

// intFormat names the CUE int64 and int32 ranges by their OpenAPI format.
// The redundant int64 bounds are dropped; int32 bounds are kept, because
// the API server does not enforce the int32 format.
func intFormat(s *apiextensionsv1.JSONSchemaProps) {
	if s.Minimum == nil || s.Maximum == nil || s.ExclusiveMinimum || s.ExclusiveMaximum {
		return
	}
	switch {
	case *s.Minimum == math.MinInt64 && *s.Maximum == math.MaxInt64:
		s.Format, s.Minimum, s.Maximum = "int64", nil, nil
	case *s.Minimum == math.MinInt32 && *s.Maximum == math.MaxInt32:
		s.Format = "int32"
	}
}

// kindNames lists the basic kinds in CUE syntax.
var kindNames = []struct {
	kind cue.Kind
	name string
}{
	{cue.NullKind, "null"}, {cue.BoolKind, "bool"}, {cue.IntKind, "int"},
	{cue.FloatKind, "float"}, {cue.StringKind, "string"}, {cue.BytesKind, "bytes"},
	{cue.StructKind, "{...}"}, {cue.ListKind, "[...]"},
}

// kindSource returns the CUE source of the value that accepts every value
// of kind k, e.g. `int | string`, or "" for no kind.
func kindSource(k cue.Kind) string {
	if k == cue.TopKind {
		return "_"
	}
	var parts []string
	for _, kn := range kindNames {
		if k&kn.kind != 0 {
			parts = append(parts, kn.name)
		}
	}
	return strings.Join(parts, " | ")
}

// formatValue prints v on one line, shortened to a readable length.
func formatValue(v cue.Value) string {
	s := strings.Join(strings.Fields(fmt.Sprint(v)), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// dropWideBounds drops the bounds beyond the int64 range, as those of
// float64 and uint64, from s and its junctions. The API server compares an
// integer with a bound after converting the bound to int64, which
// overflows for them; and every int64 is within them anyway.
func dropWideBounds(s *apiextensionsv1.JSONSchemaProps) {
	if s.Maximum != nil && *s.Maximum >= 0x1p63 {
		s.Maximum, s.ExclusiveMaximum = nil, false
	}
	if s.Minimum != nil && *s.Minimum < -0x1p63 {
		s.Minimum, s.ExclusiveMinimum = nil, false
	}
	for i := range s.AnyOf {
		dropWideBounds(&s.AnyOf[i])
	}
	for i := range s.AllOf {
		dropWideBounds(&s.AllOf[i])
	}
	if s.Not != nil {
		dropWideBounds(s.Not)
	}
}
