// Stage 1, observe: list the children the CR owns from the informer cache,
// in the partial view the template reads (viewKeys, metaView), filed by
// child id and by identity (liveChildren), which the later stages match the
// render against.
//
// It must not write, nor read children but from the cache (the deletion
// path lists them from the API server: deletion.go).

package reconcile

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// observer is stage 1: it lists, from the cache, every child a CR
// controls, at every version watched (Cluster.ChildKinds: a render may add
// kinds, so they are asked at each observe).
type observer struct {
	children client.Reader   // Reconciler.Children
	scheme   *runtime.Scheme // Reconciler.Scheme
	cluster  Cluster         // nil: no child kinds
	manager  string          // cueop's field manager
}

// view is what observe saw of a CR's children: every child it controls and
// what the template sees of them, keyed by child id.
type view struct {
	owned    liveChildren
	observed map[string]*unstructured.Unstructured
	// sources are the listed objects of the children observe converted
	// only in part, by their partial view.
	sources map[*unstructured.Unstructured]runtime.Object
	wholes  map[*unstructured.Unstructured]*unstructured.Unstructured // converted by whole
}

// live is the live object c is (same group, kind and name, at any
// version), or nil when none; see matchLive.
func (v *view) live(c render.Child) *unstructured.Unstructured {
	return v.owned.matchLive(c.Object)
}

// observe lists every child cr controls and what the template sees of
// them. With keep, a typed child is converted but for its
// metadata and those top-level fields only; view.whole converts it all
// when a step needs more.
func (o observer) observe(ctx context.Context, cr *unstructured.Unstructured, keep map[string]bool) (*view, error) {
	var objs []*unstructured.Unstructured
	v := &view{}
	for _, gvk := range o.childKinds() {
		items, sources, err := o.list(ctx, gvk, cr.GetNamespace(), string(cr.GetUID()), keep)
		if err != nil {
			what := fmt.Sprintf("list %s in namespace %s", gvk.Kind, cr.GetNamespace())
			return nil, fmt.Errorf("%s: list %s children: %w", objectText(cr), gvk.Kind, deny(what, err)) // forbidden.go
		}
		objs = append(objs, items...)
		for i, src := range sources {
			if v.sources == nil {
				v.sources = map[*unstructured.Unstructured]runtime.Object{}
			}
			v.sources[items[i]] = src
		}
	}
	v.owned = sortChildren(cr, objs)
	v.observed = v.owned.templateView(o.manager)
	return v, nil
}

// childKinds are the kinds whose children a reconcile lists.
func (o observer) childKinds() []schema.GroupVersionKind {
	if o.cluster == nil {
		return nil
	}
	return o.cluster.ChildKinds()
}

// list lists from the cache the children of one kind that a parent owns.
// A kind the scheme knows is cached as typed objects, a third of the
// memory of unstructured ones (docs/benchmarks.md), and each child is
// converted for the template as it is listed (listTyped).
func (o observer) list(ctx context.Context, gvk schema.GroupVersionKind, ns, uid string, keep map[string]bool) (items []*unstructured.Unstructured, sources []runtime.Object, err error) {
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{IndexOwnerUID: uid}}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if o.scheme != nil && o.scheme.Recognizes(listGVK) {
		return o.listTyped(ctx, gvk, listGVK, opts, keep)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(listGVK)
	if err := o.children.List(ctx, list, opts...); err != nil {
		return nil, nil, err
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil, nil
}

// listTyped lists the children of a kind the scheme knows and converts
// each. When keep is not nil and the kind has a built-in schema, a child
// is converted but for the fields not in keep: partial, and sources holds,
// at the same index, the listed object it was converted from (nil when
// items are whole).
func (o observer) listTyped(ctx context.Context, gvk, listGVK schema.GroupVersionKind, opts []client.ListOption, keep map[string]bool) ([]*unstructured.Unstructured, []runtime.Object, error) {
	obj, err := o.scheme.New(listGVK)
	if err != nil {
		return nil, nil, err
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a list", listGVK)
	}
	// Without a deep copy: the cache's reader sets each item of a typed
	// list to a struct copy of its object, and toUnstructured only sets the
	// copy's own fields and reads the rest (a Pod's deep copy was the largest
	// allocation of a settled CR's reconcile after the conversion itself).
	if err := o.children.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, nil, err
	}
	listed, err := meta.ExtractList(list)
	if err != nil {
		return nil, nil, err
	}
	// A kind without a built-in schema has its no-op decision compare live
	// values (apply.NeedsApply): it is converted whole.
	if !kschema.KnownKind(gvk) {
		keep = nil
	}
	// partial and toUnstructured set the items' own fields: they must be
	// the list's copies, not the cache's objects, as a list whose items are
	// pointers would hand out.
	return convertItems(listed, itemsCopied(list), gvk, keep)
}

// convertItems converts listed for the template: by their partial view
// with keep (and then sources are the objects converted), else whole;
// copied says whether they are the list's own copies.
func convertItems(listed []runtime.Object, copied bool, gvk schema.GroupVersionKind, keep map[string]bool) (out []*unstructured.Unstructured, sources []runtime.Object, err error) {
	out = make([]*unstructured.Unstructured, 0, len(listed))
	if keep != nil {
		sources = make([]runtime.Object, 0, len(listed))
	}
	for _, item := range listed {
		if !copied {
			item = item.DeepCopyObject()
		}
		var u *unstructured.Unstructured
		if keep != nil {
			u, err = viewOf(item, gvk, keep)
			sources = append(sources, item)
		} else {
			u, err = toUnstructured(item, gvk)
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, u)
	}
	return out, sources, nil
}

// toUnstructured converts a typed child as the API server's JSON would
// decode, but for the managedFields entries' fieldsV1, kept as JSON text (see
// apply.fieldsJSON). obj may be a shallow copy of the cache's object: only
// its own managedFields slice header is set, nothing it points to is
// written, and the result shares no map or slice with it.
func toUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	mo, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%s: no object metadata", gvk)
	}
	managed := mo.GetManagedFields()
	mo.SetManagedFields(nil)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	if len(managed) > 0 {
		m["metadata"].(map[string]any)["managedFields"] = managedEntries(managed)
	}
	return u, nil
}

// managedEntries are managedFields entries as toUnstructured gives them.
func managedEntries(managed []metav1.ManagedFieldsEntry) []any {
	entries := make([]any, len(managed))
	for i, e := range managed {
		entry := map[string]any{"manager": e.Manager, "operation": string(e.Operation), "apiVersion": e.APIVersion, "fieldsType": e.FieldsType}
		if e.Subresource != "" {
			entry["subresource"] = e.Subresource
		}
		if e.FieldsV1 != nil {
			entry["fieldsV1"] = string(e.FieldsV1.Raw)
		}
		entries[i] = entry
	}
	return entries
}

// itemsCopied is whether the items of a typed list are structs (each a copy
// of the object the cache's reader set it from), not pointers.
func itemsCopied(list client.ObjectList) bool {
	items, err := meta.GetItemsPtr(list)
	if err != nil {
		return false
	}
	t := reflect.TypeOf(items).Elem().Elem()
	return t.Kind() == reflect.Struct && t != reflect.TypeOf(runtime.RawExtension{})
}

func isControlledBy(obj, owner *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// OwnerUIDIndex is the index function of IndexOwnerUID.
func OwnerUIDIndex(obj client.Object) []string {
	if uid := obj.GetLabels()[wellknown.LabelOwnerUID]; uid != "" {
		return []string{uid}
	}
	return nil
}

// A reconcile reads of each child its metadata (identity, applied hash,
// cueop's field set: the settled check, the no-op decision of an apply,
// ownership, prune) and the paths the template reads of it (the render and
// its inputs' digest), nothing else, but for the steps that judge a child
// ready by kstatus. Converting a cached typed child into an unstructured one
// was the largest cost and allocation of a reconcile's cache reads (a Pod's
// spec costs the most and no template of a RedisCluster reads it), so
// observe converts of each typed child only its metadata and the top-level
// fields the template reads (viewKeys), when the template's reads are known:
// the template and the digest see the same paths as in the whole child.
// Steps that judge a child by kstatus (the gates of waves and of a
// recreate, the notes on absent reads) convert it whole, on demand, from
// the object listed (whole).

// viewKeys is the set of top-level fields of the children, beside their
// metadata, that a reconcile of k reads; nil when observe must convert the
// children whole: the template's reads are unknown or take whole objects,
// or the kind's Ready comes from kstatus over whole children (computed in
// the render and in the settled check's fingerprint).
func viewKeys(k *template.Kind) map[string]bool {
	reads := k.Reads
	if reads == nil || reads.Observed.All || !k.Value.LookupPath(template.PathReady).Exists() {
		return nil
	}
	keys := map[string]bool{}
	for _, byID := range reads.Observed.Sub {
		if byID == nil || byID.All {
			return nil
		}
		for k := range byID.Sub {
			keys[k] = true
		}
	}
	return keys
}

// viewOf converts of obj, a typed object the caller owns (a struct copy of
// the cache's), its metadata and its top-level fields named in keep, as
// toUnstructured converts them; obj is not modified. Each field is
// converted on its own, in a struct of that one field with the same JSON
// tag, so that the converter's rules (omitempty, omitzero, custom
// converters) apply to it as within obj, and the fields not kept are not
// walked at all (a Pod's zero spec cost as much as its metadata); the
// metadata, an ObjectMeta, is converted by metaView, as the converter
// would. An object that is not a pointer to a struct is converted whole.
func viewOf(obj runtime.Object, gvk schema.GroupVersionKind, keep map[string]bool) (*unstructured.Unstructured, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return toUnstructured(obj, gvk)
	}
	s := v.Elem()
	m := map[string]any{}
	var managed []metav1.ManagedFieldsEntry
	for _, f := range topFields(s.Type()) {
		if f.name != "metadata" && !keep[f.name] {
			continue
		}
		if om, ok := s.Field(f.index).Addr().Interface().(*metav1.ObjectMeta); ok && f.name == "metadata" {
			m["metadata"] = metaView(om) // without reflection
			managed = om.ManagedFields
			continue
		}
		part, err := fieldView(s, f)
		if err != nil {
			return nil, err
		}
		maps.Copy(m, part)
	}
	if len(managed) > 0 {
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			m["metadata"] = md
		}
		md["managedFields"] = managedEntries(managed)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// fieldView converts the field f of s, in a struct of that one field, with
// the reflective converter.
func fieldView(s reflect.Value, f topField) (map[string]any, error) {
	w := reflect.New(f.wrapper)
	w.Elem().Field(0).Set(s.Field(f.index))
	return runtime.DefaultUnstructuredConverter.ToUnstructured(w.Interface())
}

// topField is a top-level field of a typed object's struct with a JSON
// name of its own (not TypeMeta, which is inline), and a struct type of
// that one field, with its tag.
type topField struct {
	index   int
	name    string
	wrapper reflect.Type
}

var topFieldsOf sync.Map // reflect.Type → []topField

func topFields(t reflect.Type) []topField {
	if fs, ok := topFieldsOf.Load(t); ok {
		return fs.([]topField)
	}
	var fs []topField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		w := reflect.StructOf([]reflect.StructField{{Name: "F", Type: f.Type, Tag: f.Tag}})
		fs = append(fs, topField{index: i, name: name, wrapper: w})
	}
	topFieldsOf.Store(t, fs)
	return fs
}

// whole is o, a child observe listed, converted whole: o itself unless
// observe converted only its partial view. The conversion is kept for the
// rest of the reconcile. A conversion that fails (it succeeded in part)
// leaves o.
func (v *view) whole(o *unstructured.Unstructured) *unstructured.Unstructured {
	src, ok := v.sources[o]
	if o == nil || !ok {
		return o
	}
	if w, ok := v.wholes[o]; ok {
		return w
	}
	w, err := toUnstructured(src, o.GroupVersionKind()) // the list's copy, converted once
	if err != nil {
		w = o
	}
	if v.wholes == nil {
		v.wholes = map[*unstructured.Unstructured]*unstructured.Unstructured{}
	}
	v.wholes[o] = w
	return w
}

// wholeLive is the live object of c (view.live), whole.
func (v *view) wholeLive(c render.Child) *unstructured.Unstructured {
	return v.whole(v.live(c))
}

// wholeObserved is what the template sees of the children, each whole.
func (v *view) wholeObserved() map[string]*unstructured.Unstructured {
	if len(v.sources) == 0 {
		return v.observed
	}
	out := make(map[string]*unstructured.Unstructured, len(v.observed))
	for id, o := range v.observed {
		out[id] = v.whole(o)
	}
	return out
}

// metaView converts om, but for its managedFields, as
// runtime.DefaultUnstructuredConverter converts an ObjectMeta (the JSON
// names, omitempty and omitzero, a Time as RFC 3339 in UTC), without
// reflection: the metadata of every child listed is converted at every
// reconcile, and the reflective converter spent most of a partial view's
// time and allocations on it. The result shares no map or slice with om.
// TestMetaViewAsConverter checks it against the converter on random
// metadata, and that ObjectMeta and OwnerReference have no field it does
// not know.
func metaView(om *metav1.ObjectMeta) map[string]any {
	m := make(map[string]any, 8)
	putString(m, "name", om.Name)
	putString(m, "generateName", om.GenerateName)
	putString(m, "namespace", om.Namespace)
	putString(m, "selfLink", om.SelfLink)
	putString(m, "uid", string(om.UID))
	putString(m, "resourceVersion", om.ResourceVersion)
	if om.Generation != 0 {
		m["generation"] = om.Generation
	}
	if !om.CreationTimestamp.IsZero() {
		m["creationTimestamp"] = timeView(om.CreationTimestamp)
	}
	if om.DeletionTimestamp != nil {
		m["deletionTimestamp"] = timeView(*om.DeletionTimestamp)
	}
	if om.DeletionGracePeriodSeconds != nil {
		m["deletionGracePeriodSeconds"] = *om.DeletionGracePeriodSeconds
	}
	putStrings(m, "labels", om.Labels)
	putStrings(m, "annotations", om.Annotations)
	if len(om.OwnerReferences) > 0 {
		refs := make([]any, len(om.OwnerReferences))
		for i, r := range om.OwnerReferences {
			ref := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID)}
			if r.Controller != nil {
				ref["controller"] = *r.Controller
			}
			if r.BlockOwnerDeletion != nil {
				ref["blockOwnerDeletion"] = *r.BlockOwnerDeletion
			}
			refs[i] = ref
		}
		m["ownerReferences"] = refs
	}
	if len(om.Finalizers) > 0 {
		fs := make([]any, len(om.Finalizers))
		for i, f := range om.Finalizers {
			fs[i] = f
		}
		m["finalizers"] = fs
	}
	return m
}

func putString(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func putStrings(m map[string]any, key string, v map[string]string) {
	if len(v) == 0 {
		return
	}
	out := make(map[string]any, len(v))
	for k, s := range v {
		out[k] = s
	}
	m[key] = out
}

// timeView is metav1.Time's ToUnstructured.
func timeView(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

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
