package render

// ValueBytes is about how many bytes an unstructured value holds: its
// strings and keys, and a word for every other value.
func ValueBytes(v any) int {
	switch t := v.(type) {
	case string:
		return len(t)
	case map[string]any:
		n := 0
		for k, x := range t {
			n += len(k) + ValueBytes(x)
		}
		return n
	case []any:
		n := 0
		for _, x := range t {
			n += ValueBytes(x)
		}
		return n
	}
	return 8
}
