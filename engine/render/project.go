package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// observedValue is what the template sees of the observed children: of
// each, only the paths the template reads (template.Reads), so that a
// render converts into CUE the few fields it uses (a Pod's
// status.conditions) rather than the whole live object. Every child keeps
// an entry, empty when it has none of those paths, so that existence checks
// and loops over observed see the same ids. A kind whose Reads are unknown
// or whole sees each object whole (but for metadata.managedFields, which no
// template needs and costs most to convert).
func observedValue(k *template.Kind, observed map[string]*unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(observed))
	for id, o := range observed {
		out[id] = projectObserved(k, id, o.Object)
	}
	return out
}

// projectObserved is what the template reads of the live object obj of
// child id.
func projectObserved(k *template.Kind, id string, obj map[string]any) map[string]any {
	if k.Reads == nil || k.Reads.Observed.All {
		return withoutManagedFields(obj)
	}
	byID, anyID := k.Reads.Observed.Sub[id], k.Reads.Observed.Sub[template.AnyID]
	switch {
	case byID == nil && anyID == nil:
		return map[string]any{}
	case byID != nil && byID.All, anyID != nil && anyID.All:
		return withoutManagedFields(obj)
	}
	return project(obj, byID, anyID)
}

// project copies of obj the paths of a and b (either may be nil, neither
// is All). Maps on the way are new; the values at the paths are shared.
func project(obj map[string]any, a, b *template.PathTree) map[string]any {
	out := map[string]any{}
	for _, t := range [2]*template.PathTree{a, b} {
		if t == nil {
			continue
		}
		for key, sub := range t.Sub {
			v, ok := obj[key]
			if !ok {
				continue
			}
			if _, done := out[key]; done {
				continue
			}
			out[key] = projectValue(v, sub, other(t, a, b).subOf(key))
		}
	}
	return out
}

// projectValue is v restricted to the paths of a and b (b may be nil).
func projectValue(v any, a, b *template.PathTree) any {
	if a.All || (b != nil && b.All) {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v // a list or a scalar is read whole
	}
	return project(m, a, b)
}

// treeRef lets project look up the other tree's subtree by key.
type treeRef struct{ t *template.PathTree }

func other(t, a, b *template.PathTree) treeRef {
	if t == a {
		return treeRef{b}
	}
	return treeRef{a}
}

func (r treeRef) subOf(key string) *template.PathTree {
	if r.t == nil {
		return nil
	}
	return r.t.Sub[key]
}
