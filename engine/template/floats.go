package template

import (
	"maps"
	"slices"

	"cuelang.org/go/cue"
)

// WholeFloats returns v, data as the API server stores it, with every
// whole number at a path where schema admits a float and no int made a
// float64. A CUE float becomes `type: number` in the CRD, and the API
// server stores 2.0 as 2, which CUE's float refuses; the engine fills
// such a number as the float it is. v is never changed: a map or list
// that holds such a number is copied.
func WholeFloats(schema cue.Value, v any) any {
	out, _ := wholeFloats(schema, v)
	return out
}

func wholeFloats(schema cue.Value, v any) (any, bool) {
	switch t := v.(type) {
	case int64:
		if floatOnly(schema) {
			return float64(t), true
		}
	case int:
		if floatOnly(schema) {
			return float64(t), true
		}
	case map[string]any:
		return wholeFloatsStruct(schema, t)
	case []any:
		return wholeFloatsList(schema, t)
	}
	return v, false
}

// wholeFloatsStruct is wholeFloats of the fields of t.
func wholeFloatsStruct(schema cue.Value, t map[string]any) (any, bool) {
	var out map[string]any
	for key, x := range t {
		if !mayHold(x) {
			continue
		}
		sub := schema.LookupPath(cue.MakePath(cue.Str(key).Optional()))
		if !sub.Exists() {
			if y, changed := alternative(schema, t); changed {
				return y, true
			}
			continue
		}
		if y, changed := wholeFloats(sub, x); changed {
			if out == nil {
				out = maps.Clone(t)
			}
			out[key] = y
		}
	}
	if out == nil {
		return t, false
	}
	return out, true
}

// wholeFloatsList is wholeFloats of the elements of t.
func wholeFloatsList(schema cue.Value, t []any) (any, bool) {
	var out []any
	var elem cue.Value
	for i, x := range t {
		if !mayHold(x) {
			continue
		}
		sub := schema.LookupPath(cue.MakePath(cue.Index(i)))
		if !sub.Exists() {
			if !elem.Exists() {
				elem = schema.LookupPath(cue.MakePath(cue.AnyIndex))
			}
			sub = elem
		}
		if y, changed := wholeFloats(sub, x); changed {
			if out == nil {
				out = slices.Clone(t)
			}
			out[i] = y
		}
	}
	if out == nil {
		return t, false
	}
	return out, true
}

// alternative is v filled at the first alternative of a disjunction of
// structs schema (`{radius: float} | {side: float}`, whose fields a path
// does not reach) that changes it and admits the result; v unchanged when
// schema is no such disjunction or none does.
func alternative(schema cue.Value, v map[string]any) (any, bool) {
	op, alts := schema.Expr()
	if op != cue.OrOp {
		return v, false
	}
	for _, alt := range alts {
		if alt.IncompleteKind()&cue.StructKind == 0 {
			continue
		}
		y, changed := wholeFloats(alt, v)
		if changed && alt.Unify(alt.Context().Encode(y)).Err() == nil {
			return y, true
		}
	}
	return v, false
}

// mayHold tells a value that is or may hold a whole number.
func mayHold(v any) bool {
	switch v.(type) {
	case int64, int, map[string]any, []any:
		return true
	}
	return false
}

// floatOnly tells a schema that admits a float and no int.
func floatOnly(schema cue.Value) bool {
	if !schema.Exists() {
		return false
	}
	k := schema.IncompleteKind()
	return k&cue.FloatKind != 0 && k&cue.IntKind == 0
}
