package reconcile

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// A child is who it is by group, kind, namespace and name: the version a
// template renders is how it is written, not who it is. Children are listed
// at every version watched, so one object may come once per version; the
// namespace is always the CR's.

// childKey is a child's identity within its CR's namespace.
type childKey struct{ group, kind, name string }

func keyOf(o *unstructured.Unstructured) childKey {
	return childKey{o.GroupVersionKind().Group, o.GetKind(), o.GetName()}
}

// liveChildren are the objects a CR controls, as observe lists them.
type liveChildren struct {
	all   []*unstructured.Unstructured            // in the order listed
	byID  map[string][]*unstructured.Unstructured // by their child id label
	byKey map[childKey][]*unstructured.Unstructured
}

// sortChildren files objs by child id and by identity. Objects cr does not
// control are left out (labels can be copied; ownership cannot).
func sortChildren(cr *unstructured.Unstructured, objs []*unstructured.Unstructured) liveChildren {
	l := liveChildren{byID: map[string][]*unstructured.Unstructured{}, byKey: map[childKey][]*unstructured.Unstructured{}}
	for _, o := range objs {
		if !isControlledBy(o, cr) {
			continue
		}
		l.all = append(l.all, o)
		l.byKey[keyOf(o)] = append(l.byKey[keyOf(o)], o)
		if id := o.GetLabels()[wellknown.LabelID]; id != "" {
			l.byID[id] = append(l.byID[id], o)
		}
	}
	return l
}

// matchLive is the live object desired is: same group, kind and name (under
// whatever id label), at desired's version when it is listed at it, else at
// another.
func (l liveChildren) matchLive(desired *unstructured.Unstructured) *unstructured.Unstructured {
	var other *unstructured.Unstructured
	for _, o := range l.byKey[keyOf(desired)] {
		if o.GetAPIVersion() == desired.GetAPIVersion() {
			return o
		}
		if other == nil {
			other = o
		}
	}
	return other
}

// templateView is what a template sees as observed, before it renders: for
// each id one object, the most recently created (a renamed child is the
// newer one), at the version manager last applied it with (the version the
// template renders), else the first listed.
func (l liveChildren) templateView(manager string) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(l.byID))
	for id, cands := range l.byID {
		out[id] = pickView(cands, manager)
	}
	return out
}

func pickView(cands []*unstructured.Unstructured, manager string) *unstructured.Unstructured {
	newest := cands[0]
	for _, o := range cands[1:] {
		if newer(o, newest) {
			newest = o
		}
	}
	applied := appliedVersion(newest, manager)
	for _, o := range cands {
		if o.GetUID() == newest.GetUID() && o.GetAPIVersion() == applied {
			return o
		}
	}
	return newest
}

// newer orders objects by creation, then by name, then by version, so that
// the choice does not depend on the order the cache lists them in.
func newer(a, b *unstructured.Unstructured) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	if a.GetName() != b.GetName() {
		return a.GetName() > b.GetName()
	}
	return a.GetAPIVersion() < b.GetAPIVersion()
}

// appliedVersion is the apiVersion of manager's apply entry in o's
// managedFields, or "".
func appliedVersion(o *unstructured.Unstructured, manager string) string {
	md, _ := o.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		sub, _ := entry["subresource"].(string)
		if entry["manager"] == manager && entry["operation"] == "Apply" && sub == "" {
			v, _ := entry["apiVersion"].(string)
			return v
		}
	}
	return ""
}

// misread reports whether the template saw, for a child it renders, another
// object than the one that child is (renamed: the old object; another
// version than the one rendered), or saw one where none matches.
func misread(children []render.Child, l liveChildren, seen map[string]*unstructured.Unstructured) bool {
	for _, c := range children {
		want := l.matchLive(c.Object)
		if want != seen[c.ID] || (want != nil && want.GetAPIVersion() != c.Object.GetAPIVersion()) {
			return true
		}
	}
	return false
}

// renderedView is the template's view that matches children: each rendered
// child's live object, and, for the ids no child renders, the view as
// before.
func renderedView(children []render.Child, l liveChildren, before map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(before))
	for id, o := range before {
		out[id] = o
	}
	for _, c := range children {
		if o := l.matchLive(c.Object); o != nil {
			out[c.ID] = o
		} else {
			delete(out, c.ID)
		}
	}
	return out
}

// pruneVictims are the objects to delete after every child was applied:
// every object the CR controls that is no rendered child by group, kind and
// name, whatever its id label says, and is not being deleted already.
// Nothing a render wants is a victim, whatever else shares its id. An
// object listed at several versions comes once.
func pruneVictims(children []render.Child, l liveChildren) []*unstructured.Unstructured {
	wanted := map[childKey]bool{}
	for _, c := range children {
		wanted[keyOf(c.Object)] = true
	}
	seen := map[types.UID]bool{}
	var out []*unstructured.Unstructured
	for _, o := range l.all {
		if !wanted[keyOf(o)] && !seen[o.GetUID()] && o.GetDeletionTimestamp() == nil {
			seen[o.GetUID()] = true
			out = append(out, o)
		}
	}
	return out
}
