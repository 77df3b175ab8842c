package reconcile

import (
	"math"
	"unicode/utf8"
)

// jsonSame reports whether a and b are the same JSON value, as comparing
// them after json.Marshal and a decode into any would find (numbers as
// float64, a nil list or map as null), without encoding either. known is
// false when a or b holds what that round trip would change or that this
// walk does not know (a type other than those of an unstructured object,
// a string that is not valid UTF-8, a NaN or an infinity, a json.Number):
// the caller then compares them by encoding. So does a value nested deeper
// than maxJSONDepth (a cycle among them), as the decode refuses the
// deepest.
func jsonSame(a, b any) (same, known bool) {
	return jsonSameAt(a, b, 0)
}

// maxJSONDepth is deeper than any status, and well within encoding/json's
// bound on the nesting it decodes (10000).
const maxJSONDepth = 1000

func jsonSameAt(a, b any, depth int) (same, known bool) {
	if depth > maxJSONDepth {
		return false, false
	}
	ka, ok := jsonKindOf(a)
	if !ok {
		return false, false
	}
	kb, ok := jsonKindOf(b)
	if !ok {
		return false, false
	}
	if ka != kb {
		// Still walk both: an unknown value anywhere must make the
		// caller encode, as it would have before.
		return false, jsonKnown(a, depth) && jsonKnown(b, depth)
	}
	switch ka {
	case jsonNull:
		return true, true
	case jsonBool:
		return a.(bool) == b.(bool), true
	case jsonString:
		return a.(string) == b.(string), true
	case jsonNumber:
		return jsonFloat(a) == jsonFloat(b), true
	case jsonArray:
		return jsonSameArrays(a.([]any), b.([]any), depth)
	default: // jsonObject
		return jsonSameObjects(a.(map[string]any), b.(map[string]any), depth)
	}
}

// jsonSameArrays is jsonSameAt of two arrays at depth: element by
// element, every element of the longer one walked too.
func jsonSameArrays(x, y []any, depth int) (same, known bool) {
	same = len(x) == len(y)
	for i := range max(len(x), len(y)) {
		switch {
		case i >= len(x):
			if !jsonKnown(y[i], depth+1) {
				return false, false
			}
		case i >= len(y):
			if !jsonKnown(x[i], depth+1) {
				return false, false
			}
		default:
			s, known := jsonSameAt(x[i], y[i], depth+1)
			if !known {
				return false, false
			}
			same = same && s
		}
	}
	return same, true
}

// jsonSameObjects is jsonSameAt of two objects at depth: key by key, the
// keys of either that the other lacks walked too.
func jsonSameObjects(x, y map[string]any, depth int) (same, known bool) {
	same = len(x) == len(y)
	for k, v := range x {
		if !utf8.ValidString(k) {
			return false, false
		}
		w, in := y[k]
		if !in {
			if !jsonKnown(v, depth+1) {
				return false, false
			}
			same = false
			continue
		}
		s, known := jsonSameAt(v, w, depth+1)
		if !known {
			return false, false
		}
		same = same && s
	}
	for k, w := range y {
		if _, in := x[k]; !in && (!utf8.ValidString(k) || !jsonKnown(w, depth+1)) {
			return false, false
		}
	}
	return same, true
}

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonString
	jsonNumber
	jsonArray
	jsonObject
)

// jsonKindOf is the JSON kind x encodes to, ok false when jsonSame does
// not know it.
func jsonKindOf(x any) (jsonKind, bool) {
	switch t := x.(type) {
	case nil:
		return jsonNull, true
	case bool:
		return jsonBool, true
	case string:
		return jsonString, utf8.ValidString(t)
	case int, int32, int64:
		return jsonNumber, true
	case float64:
		return jsonNumber, !math.IsNaN(t) && !math.IsInf(t, 0)
	case []any:
		if t == nil {
			return jsonNull, true
		}
		return jsonArray, true
	case map[string]any:
		if t == nil {
			return jsonNull, true
		}
		return jsonObject, true
	}
	return 0, false
}

// jsonKnown is true when jsonSame knows every value within x, x at depth.
func jsonKnown(x any, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	k, ok := jsonKindOf(x)
	if !ok {
		return false
	}
	switch k {
	case jsonArray:
		for _, e := range x.([]any) {
			if !jsonKnown(e, depth+1) {
				return false
			}
		}
	case jsonObject:
		for key, v := range x.(map[string]any) {
			if !utf8.ValidString(key) || !jsonKnown(v, depth+1) {
				return false
			}
		}
	}
	return true
}

// jsonFloat is the number x as a decode into any gives it back: a float64
// (an integer rounded as strconv.ParseFloat rounds its decimal text).
func jsonFloat(x any) float64 {
	switch t := x.(type) {
	case int:
		return float64(t)
	case int32:
		return float64(t)
	case int64:
		return float64(t)
	}
	return x.(float64)
}
