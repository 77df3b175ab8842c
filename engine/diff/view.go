package diff

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/cueop/cueop/engine/wellknown"
)

// noise are the metadata fields the API server sets on every write, never
// what a template asks for.
var noise = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

// clean is a deep copy of o without status, the server-set metadata and
// cueop's applied-hash annotation (it changes with any render change and
// says nothing a reader needs).
func clean(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy().Object
	delete(c, "status")
	if md, ok := c["metadata"].(map[string]any); ok {
		for _, f := range noise {
			delete(md, f)
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, wellknown.AnnotationAppliedHash)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return c
}

// ownedBy is the set of fields manager applied to o (its Apply entries
// without subresource, at any version), or nil when it applied none.
func ownedBy(o *unstructured.Unstructured, manager string) *fieldpath.Set {
	if o == nil {
		return nil
	}
	md, _ := o.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var out *fieldpath.Set
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		sub, _ := entry["subresource"].(string)
		if entry["manager"] != manager || entry["operation"] != "Apply" || sub != "" {
			continue
		}
		raw, err := fieldsJSON(entry["fieldsV1"])
		if err != nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
			continue
		}
		if out == nil {
			out = s
		} else {
			out = out.Union(s)
		}
	}
	return out
}

func fieldsJSON(v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		return []byte(s), nil
	}
	return json.Marshal(v)
}

// union is a ∪ b, either of which may be nil (nil when both are).
func union(a, b *fieldpath.Set) *fieldpath.Set {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return a.Union(b)
}

// view is o cleaned and, when owned is not nil, cut down to the fields in
// owned, plus what names the object (apiVersion, kind, metadata.name and
// namespace). nil o is an empty view.
func view(o *unstructured.Unstructured, owned *fieldpath.Set) map[string]any {
	if o == nil {
		return nil
	}
	c := clean(o)
	if owned == nil {
		return c
	}
	out, _ := project(c, owned).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, f := range []string{"apiVersion", "kind"} {
		out[f] = c[f]
	}
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		out["metadata"] = md
	}
	md["name"], md["namespace"] = o.GetName(), o.GetNamespace()
	if o.GetNamespace() == "" {
		delete(md, "namespace")
	}
	return out
}

// project keeps of v the fields in s: a member is kept whole, a child set
// is descended into. List items are matched by key, value or index, as
// managedFields name them, and keep their key fields.
func project(v any, s *fieldpath.Set) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			pe := fieldpath.PathElement{FieldName: &k}
			if child, ok := s.Children.Get(pe); ok {
				out[k] = project(x, child)
			} else if s.Members.Has(pe) {
				out[k] = x
			}
		}
		return out
	case []any:
		var out []any
		for i, item := range t {
			if x, ok := projectItem(i, item, s); ok {
				out = append(out, x)
			}
		}
		return out
	}
	return v
}

// projectItem is the part of list item i of s, and false when s has none.
func projectItem(i int, item any, s *fieldpath.Set) (any, bool) {
	var found any
	var ok bool
	match := func(pe fieldpath.PathElement, child *fieldpath.Set) {
		if ok || !matches(pe, i, item) {
			return
		}
		ok = true
		if child == nil {
			found = item
			return
		}
		found = project(item, child)
		if m, isMap := found.(map[string]any); isMap && pe.Key != nil {
			for _, f := range *pe.Key {
				m[f.Name] = item.(map[string]any)[f.Name]
			}
		}
	}
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		child, _ := s.Children.Get(pe)
		match(pe, child)
	})
	s.Members.Iterate(func(pe fieldpath.PathElement) { match(pe, nil) })
	return found, ok
}

func matches(pe fieldpath.PathElement, i int, item any) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Value != nil:
		return value.Equals(*pe.Value, value.NewValueInterface(item))
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			x, has := m[f.Name]
			if !has || !value.Equals(f.Value, value.NewValueInterface(x)) {
				return false
			}
		}
		return true
	}
	return false
}
