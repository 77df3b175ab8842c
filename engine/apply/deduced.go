package apply

import (
	"fmt"
	"reflect"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// For kinds without a schema the desired field set is deduced: every list is
// atomic (one path) where the API server, knowing the schema, may record a
// list's items and their fields, and every map is granular where the server
// may record an atomic map as one path. The sets are compared by field path
// prefix instead: each path is cut before its first list key, value or index,
// and a path of one set counts as present in the other when a path of the
// other is a prefix of it, or it is a prefix of one. A field lost inside a
// list cannot be seen that way, so subset also compares the values.

// unrelated returns the paths of a (cut as above) that no path of b is
// prefix-related to.
func unrelated(a, b *fieldpath.Set) *fieldpath.Set {
	cutB := cut(b)
	out := &fieldpath.Set{}
	for p := range cut(a).All() {
		if !related(cutB, p) {
			out.Insert(p)
		}
	}
	return out
}

// cut cuts every path of s before its first element that is not a field name.
func cut(s *fieldpath.Set) *fieldpath.Set {
	out := &fieldpath.Set{}
	for p := range s.All() {
		for i, pe := range p {
			if pe.FieldName == nil {
				p = p[:i]
				break
			}
		}
		if len(p) > 0 {
			out.Insert(p)
		}
	}
	return out
}

// related reports whether s holds p, a prefix of p, or a path below p.
func related(s *fieldpath.Set, p fieldpath.Path) bool {
	for _, pe := range p {
		if s.Members.Has(pe) {
			return true
		}
		child, ok := s.Children.Get(pe)
		if !ok {
			return false
		}
		s = child
	}
	return true
}

// subset reports whether every value want sets is the same in have. Maps
// may have more keys. A list's items must match, in order, items of the live
// list, each as a subset; the live list may have more items (another
// writer's items of a map or set list; another writer's change to an atomic
// list takes the whole list from the field manager, which the field sets
// show). path is where they first differ.
func subset(want, have any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := subset(v, h[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return path, false
		}
		return subsequence(w, h, path)
	case nil:
		return path, have == nil
	}
	if x, ok := number(want); ok {
		y, ok := number(have)
		return path, ok && x == y
	}
	return path, reflect.DeepEqual(want, have)
}

// subsequence matches each item of want, in order, to the first item of
// have left that holds it as a subset; taking the first match never hides a
// match that exists.
func subsequence(want, have []any, path string) (string, bool) {
	j := 0
	for i, w := range want {
		for ; j < len(have); j++ {
			if _, ok := subset(w, have[j], ""); ok {
				break
			}
		}
		if j == len(have) {
			return fmt.Sprintf("%s[%d]", path, i), false
		}
		j++
	}
	return "", true
}

// number converts the numbers unstructured objects hold.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
