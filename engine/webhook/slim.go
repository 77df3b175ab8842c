package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/internal/jsonenc"
)

// A CR as stored is mostly its metadata.managedFields, and a conversion
// neither reads nor changes them: the API server keeps, of a converted
// object's metadata, only its labels and annotations, and restores every
// other field from the object it sent (restoreObjectMeta in its webhook
// converter). So an object of a review is decoded but for them
// (decodeSlim), and its conversion is encoded without them (encodeSlim):
// the webhook's time per object is that of the fields a conversion reads,
// a worker is sent those alone, and the API server decodes a response
// that much shorter.

// maxDepth is how deep an object may nest, as unstructured decodes it
// (the depth limit of k8s.io/apimachinery's util/json).
const maxDepth = 10000

// decodeSlim decodes raw, an object as a review holds it, but for its
// metadata.managedFields, whose bytes it returns (nil when the metadata
// that counts, the last, has none): they are delimited, brackets and
// strings matched, but not decoded (those a later member replaces are).
// The members of the object and of its metadata are found by one scan
// (members) and each is decoded alone.
func decodeSlim(raw []byte) (*unstructured.Unstructured, json.RawMessage, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	var managed json.RawMessage
	// replaced checks managedFields a later member replaces: only those
	// that count go unread.
	replaced := func() error {
		if managed == nil {
			return nil
		}
		var v any
		if err := utiljson.Unmarshal(managed, &v); err != nil {
			return fmt.Errorf("metadata.managedFields: %w", err)
		}
		managed = nil
		return nil
	}
	err := members(raw, 1, func(k string, v []byte) error {
		if k == "metadata" {
			if err := replaced(); err != nil { // a later metadata replaces an earlier one whole
				return err
			}
		}
		if k != "metadata" || v[0] != '{' {
			return decodeValue(obj.Object, k, v)
		}
		meta := map[string]any{}
		obj.Object[k] = meta
		return members(v, 2, func(mk string, mv []byte) error {
			if mk == "managedFields" {
				if err := replaced(); err != nil {
					return err
				}
				managed = mv
				delete(meta, mk)
				return nil
			}
			if err := decodeValue(meta, mk, mv); err != nil {
				return fmt.Errorf("metadata.%w", err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	if k, _ := obj.Object["kind"].(string); k == "" {
		return nil, nil, fmt.Errorf("object has no kind")
	}
	if av, ok := obj.Object["apiVersion"].(string); ok {
		// unstructured refuses an apiVersion that is no group/version.
		if _, err := schema.ParseGroupVersion(av); err != nil {
			return nil, nil, fmt.Errorf("apiVersion: %w", err)
		}
	}
	return obj, managed, nil
}

// members calls f with the key (unescaped) and the value's bytes of each
// member of the JSON object raw, in order, and refuses raw when it is not
// one object. A value is only delimited here, strings and brackets
// matched: f's decoder checks the value whole.
//
// depth is how deep raw nests in the object of the review (1 for the
// object itself): a value that would nest deeper than maxDepth is refused.
func members(raw []byte, depth int, f func(key string, value []byte) error) error {
	i, done, err := first(raw, '{', '}')
	if done || err != nil {
		return err
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
		vend, err := skipValue(raw, i, depth)
		if err != nil {
			return fmt.Errorf("field %s: %w", key, err)
		}
		if err := f(key, raw[i:vend]); err != nil {
			return err
		}
		if i, done, err = next(raw, vend, '}'); done || err != nil {
			return err
		}
	}
}

// first is where the first member or element of the object or array raw
// starts (opened with open), or done when it is empty; an error when raw
// is not one.
func first(raw []byte, open, close byte) (i int, done bool, err error) {
	i = skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != open {
		return 0, false, fmt.Errorf("JSON: want a value that starts with %c", open)
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == close {
		return 0, true, atEnd(raw, i+1)
	}
	return i, false, nil
}

// next is where the member or element after the value ending at end
// starts, or done when the object or array closes there (with close) and
// nothing follows it.
func next(raw []byte, end int, close byte) (i int, done bool, err error) {
	i = skipSpace(raw, end)
	switch {
	case i < len(raw) && raw[i] == ',':
		return skipSpace(raw, i+1), false, nil
	case i < len(raw) && raw[i] == close:
		return 0, true, atEnd(raw, i+1)
	}
	return 0, false, fmt.Errorf("JSON: want a comma or a closing %c", close)
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

func atEnd(raw []byte, i int) error {
	if skipSpace(raw, i) != len(raw) {
		return errors.New("JSON: text after the value's end")
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

// skipValue is the end of the value that starts at raw[i], a member of an
// object at depth base.
func skipValue(raw []byte, i, base int) (int, error) {
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
				if depth++; base+depth > maxDepth {
					return 0, fmt.Errorf("JSON: nested deeper than %d", maxDepth)
				}
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
// they are integers, as unstructured objects hold them. raw's depth was
// bounded by skipValue.
func decodeValue(m map[string]any, k string, raw json.RawMessage) error {
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	m[k] = v
	return nil
}

// encodeSlim encodes obj, a conversion of what decodeSlim gave: without
// managedFields, which the API server restores. The bytes are those
// encoding/json gives (FuzzSlim), written without its reflection: maps'
// keys sorted, strings escaped as it escapes them (a string with any byte
// it escapes, and any value but a map, a list, a string, an int64, a bool
// or null, is encoded by encoding/json itself).
func encodeSlim(obj *unstructured.Unstructured) ([]byte, error) {
	return jsonenc.Append(make([]byte, 0, 1024), obj.Object)
}
