// Package jsonenc writes JSON as encoding/json's Marshal writes it, byte
// for byte, for the values an unstructured object holds (maps, lists,
// strings, int64, bools, nulls; any other value, and any string with a
// byte Marshal escapes, is left to Marshal itself), without its
// reflection: a hash of an encoding stays the same, at a fraction of the
// allocations.
package jsonenc

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Append appends the JSON encoding of x to b, as json.Marshal gives it.
func Append(b []byte, x any) ([]byte, error) { return appendDepth(b, x, 0) }

// maxDepth is how deep Append nests before it leaves the rest to
// json.Marshal, which refuses a cycle (a map holding itself) where
// recursion would overflow the stack.
const maxDepth = 1000

func appendDepth(b []byte, x any, depth int) ([]byte, error) {
	var err error
	if depth > maxDepth {
		v, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return append(b, v...), nil
	}
	switch t := x.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return AppendString(b, t), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		keys := make([]string, 0, 32) // on the stack for most objects
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			if b, err = appendDepth(b, t[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendDepth(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	v, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(b, v...), nil
}

// AppendString appends s as a JSON string. One with only the printable
// ASCII that encoding/json writes as is goes as it is; any other is
// encoded by encoding/json (its escapes of control characters, of <, >
// and &, of U+2028 and U+2029 and of invalid UTF-8).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			v, _ := json.Marshal(s) // a string always encodes
			return append(b, v...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
