package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// A CR as stored is mostly its metadata.managedFields, and a conversion
// never changes them: the API server refuses a converted object whose
// metadata changed but for its labels and annotations. So an object of a
// review is decoded but for them (decodeSlim), converted, and encoded with
// them put back as they came (encodeSlim): the webhook's time per object
// is that of the fields a conversion reads, and a worker is sent those
// alone.

// decodeSlim decodes raw, an object as a review holds it, but for its
// metadata.managedFields, which it returns as they are (nil when absent).
// The members of the object and of its metadata are found by one scan
// (members); each is decoded alone, but managedFields, whose bytes
// encodeSlim's encoder checks.
func decodeSlim(raw []byte) (*unstructured.Unstructured, json.RawMessage, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	var managed json.RawMessage
	err := members(raw, func(k string, v []byte) error {
		if k != "metadata" || v[0] != '{' {
			return decodeValue(obj.Object, k, v)
		}
		meta := map[string]any{}
		managed = nil // a later metadata replaces an earlier one whole
		obj.Object[k] = meta
		return members(v, func(mk string, mv []byte) error {
			if mk == "managedFields" {
				managed = mv
				delete(meta, mk)
				return nil
			}
			return decodeValue(meta, mk, mv)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	if k, _ := obj.Object["kind"].(string); k == "" {
		return nil, nil, fmt.Errorf("object has no kind")
	}
	return obj, managed, nil
}

// members calls f with the key (unescaped) and the value's bytes of each
// member of the JSON object raw, in order, and refuses raw when it is not
// one object. A value is only delimited here, strings and brackets
// matched: f's decoder checks the value whole.
func members(raw []byte, f func(key string, value []byte) error) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return errors.New("not a JSON object")
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return atEnd(raw, i+1)
	}
	for {
		end, err := skipString(raw, i)
		if err != nil {
			return err
		}
		key, err := unquote(raw[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return fmt.Errorf("JSON object: no colon after key %q", key)
		}
		i = skipSpace(raw, i+1)
		vend, err := skipValue(raw, i)
		if err != nil {
			return fmt.Errorf("field %s: %w", key, err)
		}
		if err := f(key, raw[i:vend]); err != nil {
			return err
		}
		i = skipSpace(raw, vend)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return atEnd(raw, i+1)
		default:
			return errors.New("JSON object: want a comma or a closing brace")
		}
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

func atEnd(raw []byte, i int) error {
	if skipSpace(raw, i) != len(raw) {
		return errors.New("JSON object: text after its closing brace")
	}
	return nil
}

// skipString is the end of the string that starts at raw[i].
func skipString(raw []byte, i int) (int, error) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, errors.New("JSON: want a string")
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, errors.New("JSON: control character in a string")
		}
	}
	return 0, errors.New("JSON: unterminated string")
}

// skipValue is the end of the value that starts at raw[i].
func skipValue(raw []byte, i int) (int, error) {
	if i >= len(raw) {
		return 0, errors.New("JSON: want a value")
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, err := skipString(raw, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("JSON: unterminated object or array")
	}
	j := i
	for j < len(raw) && !endsLiteral(raw[j]) {
		j++
	}
	if j == i {
		return 0, errors.New("JSON: want a value")
	}
	return j, nil
}

func endsLiteral(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// unquote is the string the JSON string s holds.
func unquote(s []byte) (string, error) {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "", fmt.Errorf("JSON object key %s: %w", s, err)
	}
	return out, nil
}

// decodeValue sets m[k] to the value of raw, numbers kept as int64 where
// they are integers, as unstructured objects hold them.
func decodeValue(m map[string]any, k string, raw json.RawMessage) error {
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("field %s: %w", k, err)
	}
	m[k] = v
	return nil
}

// encodeSlim encodes obj, a conversion of what decodeSlim gave, with the
// managedFields it returned.
func encodeSlim(obj *unstructured.Unstructured, managed json.RawMessage) ([]byte, error) {
	if managed != nil {
		if meta, ok := obj.Object["metadata"].(map[string]any); ok {
			meta["managedFields"] = managed
			defer delete(meta, "managedFields")
		}
	}
	return json.Marshal(obj.Object)
}
