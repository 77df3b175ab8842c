package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// StaleFields tells whether mfs has an entry at another apiVersion than
// apiVersion: once that version is not served, every write of the CR
// fails (the API server cannot convert the CR to the entry's version), a
// status write included.
func StaleFields(mfs []metav1.ManagedFieldsEntry, apiVersion string) bool {
	for _, e := range mfs {
		if e.APIVersion != apiVersion {
			return true
		}
	}
	return false
}

// MovedFields returns mfs, the managedFields of obj read at apiVersion,
// with every entry at another version moved to apiVersion. A moved entry
// keeps the paths of its field set that obj holds at apiVersion (labels,
// annotations, a field of the same name) and loses the others (a field
// the version renamed: the API server keeps no mapping of field paths
// between versions, and a conversion maps values, not paths); an entry
// left with no path, or whose field set cannot be read, is dropped.
// Entries that then name the same manager, operation and subresource are
// merged, their field sets united, as the API server keys them so. The
// entries already at apiVersion are kept as they are, in their order.
func MovedFields(obj map[string]any, mfs []metav1.ManagedFieldsEntry, apiVersion string) []metav1.ManagedFieldsEntry {
	type id struct{ manager, subresource string }
	out := make([]metav1.ManagedFieldsEntry, 0, len(mfs))
	at := map[id]int{} // index in out of the entry at apiVersion of an id
	sets := map[int]*fieldpath.Set{}
	h := &holder{obj: obj}
	key := func(e metav1.ManagedFieldsEntry) id {
		return id{e.Manager + "\x00" + string(e.Operation), e.Subresource}
	}
	for _, e := range mfs {
		if e.APIVersion == apiVersion {
			at[key(e)] = len(out)
			out = append(out, e)
		}
	}
	for _, e := range mfs {
		if e.APIVersion == apiVersion {
			continue
		}
		kept := heldFields(h, e.FieldsV1)
		if kept == nil || kept.Empty() {
			continue
		}
		i, ok := at[key(e)]
		if !ok {
			e.APIVersion, e.FieldsType, e.FieldsV1 = apiVersion, "FieldsV1", nil
			i = len(out)
			at[key(e)] = i
			out = append(out, e)
		}
		if sets[i] == nil {
			sets[i] = heldFields(h, out[i].FieldsV1)
			if sets[i] == nil {
				sets[i] = &fieldpath.Set{}
			}
		}
		sets[i] = sets[i].Union(kept)
		if e.Time != nil && (out[i].Time == nil || out[i].Time.Before(e.Time)) {
			out[i].Time = e.Time
		}
	}
	for i, s := range sets {
		b, err := s.ToJSON()
		if err != nil {
			continue
		}
		out[i].FieldsType, out[i].FieldsV1 = "FieldsV1", &metav1.FieldsV1{Raw: b}
	}
	return out
}

// heldFields is the field set f cut to the paths h's object holds; nil
// when f is missing or cannot be read.
func heldFields(h *holder, f *metav1.FieldsV1) *fieldpath.Set {
	if f == nil {
		return nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(f.Raw)); err != nil {
		return nil
	}
	kept := &fieldpath.Set{}
	set.Iterate(func(p fieldpath.Path) {
		if h.holds(p) {
			kept.Insert(p.Copy())
		}
	})
	return kept
}

// holder tells which paths obj holds. A list element selected by its key
// fields or its value is found through an index of the list built at its
// first lookup, so that a field set naming each of the n elements of a
// list costs O(n), not O(n²): a CR's managedFields may name every element
// of a list of thousands.
type holder struct {
	obj   any
	index map[listIndex]map[string][]any
}

// listIndex names the index of one list (its first element's address and
// its length) by the key field names its elements are selected by (none:
// by their value).
type listIndex struct {
	first *any
	n     int
	names string
}

// holds tells whether obj has a value at p: a field of a map, an element
// of a list by its key fields, its value or its index.
func (h *holder) holds(p fieldpath.Path) bool {
	cur := h.obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return false
			}
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index < 0 || *pe.Index >= len(l) {
				return false
			}
			cur = l[*pe.Index]
		case pe.Key != nil, pe.Value != nil:
			l, ok := cur.([]any)
			if !ok || len(l) == 0 {
				return false
			}
			found := false
			for _, item := range h.candidates(l, pe) {
				if matches(item, pe) {
					cur, found = item, true
					break
				}
			}
			if !found {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// candidates are the elements of l (not empty) whose key fields, or
// value, print as pe's; matches tells which one pe selects.
func (h *holder) candidates(l []any, pe fieldpath.PathElement) []any {
	var names []string
	if pe.Key != nil {
		for _, f := range *pe.Key {
			names = append(names, f.Name)
		}
	}
	li := listIndex{first: &l[0], n: len(l), names: strings.Join(names, "\x00")}
	idx, ok := h.index[li]
	if !ok {
		idx = map[string][]any{}
		for _, item := range l {
			if e, ok := elementOf(item, pe.Key != nil, names); ok {
				s := e.String()
				idx[s] = append(idx[s], item)
			}
		}
		if h.index == nil {
			h.index = map[listIndex]map[string][]any{}
		}
		h.index[li] = idx
	}
	return idx[pe.String()]
}

// elementOf is the path element that selects item by its key fields
// names (keyed) or by its value.
func elementOf(item any, keyed bool, names []string) (fieldpath.PathElement, bool) {
	if !keyed {
		v := value.NewValueInterface(item)
		return fieldpath.PathElement{Value: &v}, true
	}
	m, ok := item.(map[string]any)
	if !ok {
		return fieldpath.PathElement{}, false
	}
	key := make(value.FieldList, 0, len(names))
	for _, n := range names {
		v, ok := m[n]
		if !ok {
			return fieldpath.PathElement{}, false
		}
		key = append(key, value.Field{Name: n, Value: value.NewValueInterface(v)})
	}
	return fieldpath.PathElement{Key: &key}, true
}

// matches tells whether the list element item is the one pe selects by
// its key fields or its value.
func matches(item any, pe fieldpath.PathElement) bool {
	if pe.Value != nil {
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	}
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	for _, f := range *pe.Key {
		v, ok := m[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// moveFields moves the managedFields entries of obj at other versions to
// gvk's (MovedFields), by a merge patch of the CR itself carrying its
// resourceVersion and its new managedFields (a write through a
// subresource cannot change them): the CR is stored anew at the storage
// version too. It tells whether that wrote. A conflict reads the CR
// again; a CR gone is skipped.
func (m *Migrator) moveFields(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) (bool, error) {
	apiVersion := gvk.GroupVersion().String()
	for attempt := 1; ; attempt++ {
		if m.Limiter != nil {
			if err := m.Limiter.Wait(ctx); err != nil {
				return false, err
			}
		}
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(gvk)
		if err := m.Reader.Get(ctx, client.ObjectKeyFromObject(obj), cr); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("%s %s/%s: read at %s: %w", gvk.Kind, obj.Namespace, obj.Name, gvk.Version, err)
		}
		if !StaleFields(cr.GetManagedFields(), apiVersion) {
			return false, nil // moved meanwhile
		}
		mfs := MovedFields(cr.Object, cr.GetManagedFields(), apiVersion)
		if len(mfs) == 0 {
			// An empty list would keep the entries there are; this one
			// entry, empty, is how the API server is told to clear them.
			mfs = []metav1.ManagedFieldsEntry{{}}
		}
		rv := cr.GetResourceVersion()
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "managedFields": mfs}})
		if err != nil {
			return false, err
		}
		if m.Limiter != nil { // the Patch is a second request: its own token
			if err := m.Limiter.Wait(ctx); err != nil {
				return false, err
			}
		}
		target := &metav1.PartialObjectMetadata{}
		target.SetGroupVersionKind(gvk)
		target.SetNamespace(obj.Namespace)
		target.SetName(obj.Name)
		err = m.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
		switch {
		case err == nil:
			return target.ResourceVersion != rv, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err) && attempt < maxConflicts:
		default:
			return false, fmt.Errorf("%s %s/%s: move managedFields to %s: %w", gvk.Kind, obj.Namespace, obj.Name, gvk.Version, err)
		}
	}
}

// MoveFields moves, for every stored CR of the CRD named name, its
// managedFields entries at other versions to the storage version
// (MovedFields), a page at a time and with no checkpoint (a pass costs its
// list, and a write per CR that had such an entry): what stopping to serve
// a version needs once no CR is stored at it. It fails with a
// RefusedError when the API server refused some.
func (m *Migrator) MoveFields(ctx context.Context, name string) (Progress, error) {
	crd, err := m.crd(ctx, name)
	if err != nil {
		return Progress{CRD: name}, err
	}
	to, _ := Pending(crd)
	p := Progress{CRD: name, Kind: crd.Spec.Names.Kind, To: to}
	if err := m.pass(ctx, crd, &p, "", false); err != nil {
		return p, err
	}
	if p.Refused > 0 {
		return p, &RefusedError{Progress: p}
	}
	return p, nil
}
