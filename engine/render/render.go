// The render itself: Options, and the Result and Child it produces;
// evaluate fills the template with the CR, what the template reads of the
// observed children (observedValue) and the referenced objects, then
// exports the children, the status and readiness. Every child is checked
// as the API server and the administrator would (checkChild: the engine's
// fields, forbidden fields, names and labels, allowed kinds and scope) and
// given the namespace, owner reference and labels the engine sets.
//
// It must not read a cluster, a clock or the environment, and must not let
// a child through that the engine would not apply: a refused child refuses
// the whole render.

package render

import (
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// DefaultMaxChildren bounds what one render may produce, whatever the
// schema allows.
const DefaultMaxChildren = 500

// Options are the administrator's policy for a render.
type Options struct {
	// AllowedKinds is the allow-list of child kinds; nil means
	// DefaultAllowedKinds.
	AllowedKinds KindSet
	// Scope tells namespaced from cluster-scoped kinds; nil means
	// BuiltinScope. Unknown kinds are refused.
	Scope ScopeFunc
	// ReadableKinds is the allow-list of kinds a template may reference
	// (references.go); nil means DefaultReadableKinds.
	ReadableKinds KindSet
	// DataKinds are the kinds that hold data (results.go): released, not
	// deleted, unless the template says otherwise; nil means
	// DefaultDataKinds.
	DataKinds KindSet
	// MaxChildren bounds the number of children; 0 means DefaultMaxChildren.
	MaxChildren int
	// Budget bounds each render in time and memory (RenderInputs,
	// inputs.go); the zero value is the defaults.
	Budget budget.Budget

	// tracker is told what the render evaluates (set by Render).
	tracker *budget.Tracker
}

var defaultAllowed = MustKindSet(DefaultAllowedKinds)

func (o Options) withDefaults() Options {
	if o.AllowedKinds == nil {
		o.AllowedKinds = defaultAllowed
	}
	if o.Scope == nil {
		o.Scope = BuiltinScope
	}
	if o.ReadableKinds == nil {
		o.ReadableKinds = defaultReadable
	}
	if o.MaxChildren == 0 {
		o.MaxChildren = DefaultMaxChildren
	}
	return o
}

// Child is one object a parent should own.
type Child struct {
	ID     string
	Object *unstructured.Unstructured
	// Policy is the child's lifecycle policy (results.go).
	Policy Policy
	// Wave is the child's wave (results.go): 0 unless the template says.
	Wave int
	// ReadyWhen is the template's readiness of the observed child
	// (readyWhen), nil when the template gives none and kstatus decides.
	ReadyWhen *bool
}

// Result is what a parent renders to.
type Result struct {
	// Children are sorted by ID.
	Children []Child
	// Status holds the template's status fields (without observedGeneration
	// and conditions, which the controller adds).
	Status map[string]any
	// Ready is the template's `ready`, or by default whether every child
	// exists and is ready by kstatus rules.
	Ready bool
	// ReadyByDefault: the template gave no `ready` for this parent (it has
	// none, or only under a condition this parent does not meet), so Ready
	// is the default, which Reuse computes again from whole children.
	ReadyByDefault bool
	// Immutable are the values of the kind's immutable spec fields, for the
	// controller to record in status.immutable; nil when the kind has none.
	Immutable map[string]any
	// Conditions are the template's own conditions (results.go), sorted
	// by type; nil when it gives none.
	Conditions []Condition
}

// evaluate renders k for parent and its inputs; Render runs it within the
// budget.
func evaluate(k *template.Kind, parent *unstructured.Unstructured, in Inputs, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	observed := in.Observed
	opts.tracker.Phase("the template filled with this parent")
	v := fill(k, parent, in)
	if err := specError(v, k.Spec.Pos()); err != nil {
		return nil, err
	}
	immutable, err := immutableValues(k, parent, v)
	if err != nil {
		return nil, err
	}
	opts.tracker.Phase("children")
	children, err := exportChildren(v.LookupPath(template.PathChildren), parent, opts)
	if err != nil {
		return nil, err
	}
	if err := applyPolicies(v, children, opts.DataKinds); err != nil {
		return nil, err
	}
	if err := applyWaves(k, v, children, observed); err != nil {
		return nil, err
	}
	opts.tracker.Phase("status")
	status, err := exportStatus(k, v)
	if err != nil {
		return nil, err
	}
	opts.tracker.Phase("conditions")
	conditions, err := exportConditions(k, v)
	if err != nil {
		return nil, err
	}
	opts.tracker.Phase("ready")
	ready, byDefault, err := exportReady(v, children, observed)
	if err != nil {
		return nil, err
	}
	return &Result{Children: children, Status: status, Ready: ready, ReadyByDefault: byDefault, Immutable: immutable, Conditions: conditions}, nil
}

// fill unifies the compiled template with the parent and the observed
// children. It is k.Value.FillPath(cue.Path{}, x) without the wrapper vertex
// FillPath builds and evaluates around x before unifying: converting x with
// Encode (nil as _, as FillPath converts it) and unifying it directly
// evaluates the filled data once instead of twice.
func fill(k *template.Kind, parent *unstructured.Unstructured, in Inputs) cue.Value {
	pv := parentValue(parent)
	pv["spec"] = template.WholeFloats(k.Spec, pv["spec"])
	data := map[string]any{
		template.FieldParent:   pv,
		template.FieldObserved: observedValue(k, in.Observed),
	}
	if k.References {
		data[template.FieldReferenced] = referencedValue(in.Referenced)
	}
	x := k.Value.Context().Encode(data, cue.NilIsAny(true))
	return k.Value.Unify(x)
}

// parentValue is the part of the CR a template sees.
func parentValue(p *unstructured.Unstructured) map[string]any {
	md := map[string]any{"name": p.GetName(), "namespace": p.GetNamespace()}
	if uid := p.GetUID(); uid != "" {
		md["uid"] = string(uid)
	}
	if g := p.GetGeneration(); g != 0 {
		md["generation"] = g
	}
	if l := p.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	if a := p.GetAnnotations(); len(a) > 0 {
		md["annotations"] = a
	}
	spec, _ := p.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"apiVersion": p.GetAPIVersion(), "kind": p.GetKind(), "metadata": md, "spec": spec}
}

// WireParent is what a render reads of the CR p, for an evaluator that
// copies the inputs elsewhere: parentValue (its type, identity, spec and
// the metadata a template may read) and the immutable values recorded in
// its status, not its managedFields, its other status or the rest of its
// metadata. A render of it gives what a render of p gives.
func WireParent(p *unstructured.Unstructured) map[string]any {
	v := parentValue(p)
	if recorded, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "status", StatusImmutable); ok {
		v["status"] = map[string]any{StatusImmutable: recorded}
	}
	return v
}

// withoutManagedFields returns obj without metadata.managedFields. obj is
// never changed: an object that has them is copied (two levels deep), one
// that has none is returned as is.
func withoutManagedFields(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, has := md["managedFields"]; !has {
		return obj
	}
	md2 := make(map[string]any, len(md))
	for k, v := range md {
		if k != "managedFields" {
			md2[k] = v
		}
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	out["metadata"] = md2
	return out
}

// exportStatus exports the template's status, checked against #Status.
func exportStatus(k *template.Kind, v cue.Value) (map[string]any, error) {
	sv := v.LookupPath(template.PathStatus)
	if !sv.Exists() {
		return map[string]any{}, nil
	}
	if k.Status.Exists() && !k.StatusChecked {
		sv = sv.Unify(k.Status)
	}
	if err := sv.Validate(cue.Concrete(true)); err != nil {
		return nil, statusError(k, sv, err)
	}
	if status, ok := exportObject(sv); ok {
		return status, nil
	}
	var status map[string]any
	if err := sv.Decode(&status); err != nil {
		return nil, evalError(err)
	}
	return normalize(status).(map[string]any), nil
}

// exportReady is the template's `ready`, or when it gives none for this
// parent the default readiness (byDefault).
func exportReady(v cue.Value, children []Child, observed map[string]*unstructured.Unstructured) (ready, byDefault bool, err error) {
	rv := v.LookupPath(template.PathReady)
	if !rv.Exists() {
		return defaultReady(children, observed), true, nil
	}
	ready, err = rv.Bool()
	if err != nil {
		return false, false, evalError(err)
	}
	return ready, false, nil
}

func sortedIDs(v cue.Value) ([]string, map[string]cue.Value, error) {
	iter, err := v.Fields()
	if err != nil {
		return nil, nil, evalError(err)
	}
	vals := map[string]cue.Value{}
	var ids []string
	for iter.Next() {
		id := iter.Selector().Unquoted()
		ids = append(ids, id)
		vals[id] = iter.Value()
	}
	sort.Strings(ids)
	return ids, vals, nil
}

// normalize turns the numbers CUE decodes into what unstructured objects
// hold: int64 for integers, float64 otherwise.
func normalize(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			t[k] = normalize(v)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = normalize(v)
		}
		return t
	case int:
		return int64(t)
	case float64:
		return t
	default:
		return x
	}
}

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

// exportObject converts a concrete CUE struct into an unstructured object:
// the map that Value.Decode into map[string]any followed by normalize
// produces, with about a third less memory and time.
//
// Besides the field ordering of Fields, which nothing public avoids, Decode
// spends on every field calls to Err and IsNull (each allocates an evaluator
// context) and reflection. exportObject asks each value only what it needs:
// Kind, which is free, then Fields, List or String.
//
// ok is false for any value off the happy path: a value that is not a
// struct, bytes, an integer beyond int64, a float beyond float64, an
// incomplete value or an error. The caller then falls back to Decode, which
// gives the same result or error as before: exportObject never decides
// anything Decode would decide differently.
func exportObject(v cue.Value) (map[string]any, bool) {
	v, _ = v.Default()
	if v.Kind() != cue.StructKind {
		return nil, false
	}
	return exportStruct(v)
}

// exportValue converts one concrete value as Decode does into an interface:
// null to nil, integers to int64, floats to float64, lists to []any (never
// nil) and structs to map[string]any.
func exportValue(v cue.Value) (any, bool) {
	v, _ = v.Default()
	switch v.Kind() {
	case cue.NullKind:
		return nil, true
	case cue.BoolKind:
		b, err := v.Bool()
		return b, err == nil
	case cue.IntKind:
		i, err := v.Int64()
		return i, err == nil
	case cue.FloatKind:
		f, err := v.Float64()
		return f, err == nil
	case cue.StringKind:
		s, err := v.String()
		return s, err == nil
	case cue.ListKind:
		return exportList(v)
	case cue.StructKind:
		return exportStruct(v)
	}
	return nil, false
}

// exportStruct converts the regular fields of a struct, as Decode does.
func exportStruct(v cue.Value) (map[string]any, bool) {
	iter, err := v.Fields()
	if err != nil {
		return nil, false
	}
	m := map[string]any{}
	for iter.Next() {
		x, ok := exportValue(iter.Value())
		if !ok {
			return nil, false
		}
		m[iter.Selector().Unquoted()] = x
	}
	return m, true
}

// exportList converts a list; an empty list is an empty, non-nil slice.
func exportList(v cue.Value) ([]any, bool) {
	iter, err := v.List()
	if err != nil {
		return nil, false
	}
	a := []any{}
	for iter.Next() {
		x, ok := exportValue(iter.Value())
		if !ok {
			return nil, false
		}
		a = append(a, x)
	}
	return a, true
}

// exportChildren exports and checks every child. Every refused child is
// reported; one refusal refuses the whole render.
func exportChildren(v cue.Value, parent *unstructured.Unstructured, opts Options) ([]Child, error) {
	ids, vals, err := sortedIDs(v)
	if err != nil {
		return nil, err
	}
	if len(ids) > opts.MaxChildren {
		return nil, &Error{Reason: wellknown.ReasonChildRefused, Messages: []string{
			fmt.Sprintf("%s: children: %d children exceed the render budget of %d", v.Pos(), len(ids), opts.MaxChildren)}}
	}
	children := make([]Child, 0, len(ids))
	refused := &Error{Reason: wellknown.ReasonChildRefused}
	seen := map[string]string{}
	// One walk validates every child of a good render; a bad one is looked
	// for child by child, so that the error is still the first bad child's.
	valid := v.Validate(cue.Concrete(true)) == nil
	for _, id := range ids {
		opts.tracker.Phase("children." + id)
		obj, err := exportChild(id, vals[id], valid)
		if err != nil {
			return nil, err
		}
		if msg := checkChild(id, vals[id], obj, parent, opts, seen); msg != "" {
			refused.Messages = append(refused.Messages, msg)
			continue
		}
		setEngineFields(id, obj, parent)
		children = append(children, Child{ID: id, Object: obj})
	}
	if len(refused.Messages) > 0 {
		return nil, refused
	}
	return children, nil
}

// exportChild validates and exports one child. valid tells that the whole
// children struct validates, and so every child in it.
func exportChild(id string, v cue.Value, valid bool) (*unstructured.Unstructured, error) {
	if !valid {
		if err := v.Validate(cue.Concrete(true)); err != nil {
			return nil, evalError(err)
		}
	}
	if obj, ok := exportObject(v); ok {
		return &unstructured.Unstructured{Object: obj}, nil
	}
	var obj map[string]any
	if err := v.Decode(&obj); err != nil {
		return nil, &Error{Reason: wellknown.ReasonTemplateError, Messages: []string{childError(id, v, "not an object: %v", err)}}
	}
	return &unstructured.Unstructured{Object: normalize(obj).(map[string]any)}, nil
}

// checkChild returns why a child is refused, or "".
func checkChild(id string, v cue.Value, obj *unstructured.Unstructured, parent *unstructured.Unstructured, opts Options, seen map[string]string) string {
	if errs := validation.IsValidLabelValue(id); len(errs) > 0 || id == "" {
		return childError(id, v, "child id must be a valid label value: %v", errs)
	}
	gvk := obj.GroupVersionKind()
	if gvk.Version == "" || gvk.Kind == "" {
		return childError(id, v, "apiVersion and kind are required")
	}
	if obj.GetName() == "" {
		return childError(id, v, "metadata.name is required")
	}
	if !opts.AllowedKinds[gvk.GroupKind()] {
		return childError(id, v, "kind %s is not in the allowed kinds (%s)", gvk.GroupKind(), opts.AllowedKinds)
	}
	if namespaced, known := opts.Scope(gvk.GroupKind()); !known || !namespaced {
		return childError(id, v, "kind %s is cluster-scoped or unknown: children live in their parent's namespace", gvk.GroupKind())
	}
	if ns := obj.GetNamespace(); ns != "" && ns != parent.GetNamespace() {
		return childError(id, v, "namespace %q refused: children live in their parent's namespace %q", ns, parent.GetNamespace())
	}
	if msg := checkEngineSet(id, v, obj); msg != "" {
		return msg
	}
	key := gvk.GroupKind().String() + "/" + obj.GetName()
	if other, dup := seen[key]; dup {
		return childError(id, v, "%s %s is also rendered by child %s", gvk.Kind, obj.GetName(), other)
	}
	seen[key] = id
	return ""
}

// setEngineFields gives a child its parent's namespace, the management
// labels and, when the parent has a uid, the controller owner reference.
func setEngineFields(id string, obj, parent *unstructured.Unstructured) {
	obj.SetNamespace(parent.GetNamespace())
	if md, ok := plainMetadata(obj); ok {
		addEngineFields(id, md, parent)
		return
	}
	setEngineFieldsSlow(id, obj, parent)
}

// setEngineFieldsSlow sets the labels and the owner reference through the
// unstructured getters and setters, which normalize what the template wrote
// (labels that are not strings, owner references).
func setEngineFieldsSlow(id string, obj, parent *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range engineLabels(id, parent) {
		labels[k] = v
	}
	obj.SetLabels(labels)
	if parent.GetUID() == "" {
		return
	}
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ownerReference(parent)))
}

// plainMetadata returns the child's metadata when its labels are absent or
// all strings and it has no owner references: the common case, where
// addEngineFields gives what setEngineFieldsSlow gives without its copies
// and the reflection of SetOwnerReferences.
func plainMetadata(obj *unstructured.Unstructured) (map[string]any, bool) {
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	if _, has := md["ownerReferences"]; has {
		return nil, false
	}
	labels, has := md["labels"]
	if !has {
		return md, true
	}
	m, ok := labels.(map[string]any)
	if !ok {
		return nil, false
	}
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return nil, false
		}
	}
	return md, true
}

// addEngineFields sets the management labels and the owner reference on
// metadata that plainMetadata accepted.
func addEngineFields(id string, md map[string]any, parent *unstructured.Unstructured) {
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	for k, v := range engineLabels(id, parent) {
		labels[k] = v
	}
	if parent.GetUID() == "" {
		return
	}
	ref := ownerReference(parent)
	md["ownerReferences"] = []any{map[string]any{
		"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID),
		"controller": true, "blockOwnerDeletion": true,
	}}
}

// engineLabels are the labels the engine sets on child id.
func engineLabels(id string, parent *unstructured.Unstructured) map[string]string {
	labels := map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByValue, wellknown.LabelID: id}
	if uid := parent.GetUID(); uid != "" {
		labels[wellknown.LabelOwnerUID] = string(uid)
	}
	return labels
}

// ownerReference is the controller reference to parent.
func ownerReference(parent *unstructured.Unstructured) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(), Name: parent.GetName(),
		UID: parent.GetUID(), Controller: &t, BlockOwnerDeletion: &t,
	}
}

// defaultReady is true when every child exists and is Current by kstatus.
func defaultReady(children []Child, observed map[string]*unstructured.Unstructured) bool {
	for _, c := range children {
		o, ok := observed[c.ID]
		if !ok {
			return false
		}
		if c.ReadyWhen != nil {
			if !*c.ReadyWhen {
				return false
			}
			continue
		}
		res, err := status.Compute(o)
		if err != nil || res.Status != status.CurrentStatus {
			return false
		}
	}
	return true
}

// Fields a child may not set. Ownership is the engine's: it sets the one
// controller owner reference, and a template that brings its own owners or
// finalizers could hand a child to another controller, keep it from being
// garbage collected, or block its deletion. The others are the API server's
// to write: sent with an apply they are ignored at best and refused at
// worst, and a template that copies them from `observed` means something
// it cannot have.
var forbiddenMetadata = []string{
	"ownerReferences", "finalizers", "uid", "resourceVersion", "generation",
	"managedFields", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
}

// checkForbidden refuses a child that sets a field of forbiddenMetadata or
// a status. `creationTimestamp: null` and `status: {}`, which
// `kubectl create --dry-run -o yaml` writes into every object, say nothing:
// they are dropped instead.
func checkForbidden(id string, v cue.Value, obj *unstructured.Unstructured) string {
	md, _ := obj.Object["metadata"].(map[string]any)
	if ts, ok := md["creationTimestamp"]; ok && ts == nil {
		delete(md, "creationTimestamp")
	}
	if st, ok := obj.Object["status"].(map[string]any); ok && len(st) == 0 {
		delete(obj.Object, "status")
	}
	for _, f := range forbiddenMetadata {
		if _, set := md[f]; set {
			return fieldError(id, v, cue.MakePath(cue.Str("metadata"), cue.Str(f)),
				"metadata.%s refused: %s", f, forbiddenWhy(f))
		}
	}
	if _, set := obj.Object["status"]; set {
		return fieldError(id, v, cue.MakePath(cue.Str("status")),
			"status refused: a child's status is written by its own controller, not by the template")
	}
	return ""
}

func forbiddenWhy(field string) string {
	switch field {
	case "ownerReferences":
		return "the engine sets the one controller owner reference of every child"
	case "finalizers":
		return "a finalizer no controller removes would block the child's deletion"
	}
	return "the API server sets it"
}

// fieldError is childError at the position of the child's field at p, or
// of the child when the field has none.
func fieldError(id string, v cue.Value, p cue.Path, format string, args ...any) string {
	if f := v.LookupPath(p); f.Exists() && f.Pos().IsValid() {
		return childError(id, f, format, args...)
	}
	return childError(id, v, format, args...)
}

// checkEngineSet refuses a child whose template-set fields the checks
// above and below refuse, in the order a reader fixes them.
func checkEngineSet(id string, v cue.Value, obj *unstructured.Unstructured) string {
	if msg := checkForbidden(id, v, obj); msg != "" {
		return msg
	}
	return checkNames(id, v, obj)
}

// nameRule is how the API server validates the names of one kind.
type nameRule struct {
	desc  string
	check apimachineryvalidation.ValidateNameFunc
}

var (
	dnsSubdomain = nameRule{"a DNS-1123 subdomain", apimachineryvalidation.NameIsDNSSubdomain}
	dnsLabel     = nameRule{"a DNS-1123 label", apimachineryvalidation.NameIsDNSLabel}
	dns1035Label = nameRule{"a DNS-1035 label", apimachineryvalidation.NameIsDNS1035Label}
)

// nameRules are the built-in kinds whose names the API server holds to
// more than a DNS-1123 subdomain (the rule of every other kind, custom
// kinds included), as Kubernetes' own validation does (pkg/apis/*/validation).
var nameRules = map[schema.GroupKind]nameRule{
	{Kind: "Service"}:                    dns1035Label,
	{Group: "apps", Kind: "StatefulSet"}: dnsLabel,
	// A Job's name becomes the value of its pods' job-name label.
	{Group: "batch", Kind: "Job"}: {"a DNS-1123 subdomain and a label value (at most 63 characters)", func(name string, prefix bool) []string {
		return append(apimachineryvalidation.NameIsDNSSubdomain(name, prefix), validation.IsValidLabelValue(name)...)
	}},
	// The CronJob controller appends an 11-character suffix to name Jobs.
	{Group: "batch", Kind: "CronJob"}: {"a DNS-1123 subdomain of at most 52 characters", func(name string, prefix bool) []string {
		errs := apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		if len(name) > 52 {
			errs = append(errs, "must be no more than 52 characters")
		}
		return errs
	}},
}

// selectorPaths are label maps that are not under a `labels` or
// `matchLabels` key, by kind.
var selectorPaths = map[schema.GroupKind][]string{
	{Kind: "Service"}:               {"spec", "selector"},
	{Kind: "ReplicationController"}: {"spec", "selector"},
}

// checkNames refuses a child whose name, labels or annotations the API
// server would refuse: the name by its kind's rule (nameRules), every label
// map (metadata.labels and the labels of embedded objects such as pod
// templates, matchLabels, a Service's selector) by the label rules, the
// annotations by their size and keys.
func checkNames(id string, v cue.Value, obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	rule, ok := nameRules[gk]
	if !ok {
		rule = dnsSubdomain
	}
	if errs := rule.check(obj.GetName(), false); len(errs) > 0 {
		return fieldError(id, v, cue.ParsePath("metadata.name"), "metadata.name %q is not %s, as a %s's name must be: %s",
			obj.GetName(), rule.desc, gk.Kind, strings.Join(errs, "; "))
	}
	var errs field.ErrorList
	walkLabels(obj.Object, nil, func(p []string, labels map[string]string) {
		errs = append(errs, metav1validation.ValidateLabels(labels, fieldPath(p))...)
	})
	if sel := selectorPaths[gk]; sel != nil {
		if m, found, _ := unstructured.NestedStringMap(obj.Object, sel...); found {
			errs = append(errs, metav1validation.ValidateLabels(m, fieldPath(sel))...)
		}
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(a, field.NewPath("metadata", "annotations"))...)
	}
	if len(errs) == 0 {
		return ""
	}
	return fieldError(id, v, cuePath(errs[0].Field), "%s", errs.ToAggregate().Error())
}

// walkLabels calls f with every label map of x: the `labels` of any
// `metadata` and any `matchLabels`, with their paths, in the order of a
// walk through sorted keys and list indexes. It walks x unsorted with one
// path stack, copies the path of each label map found and sorts only
// those: a child is mostly maps without labels, walked for every render.
func walkLabels(x any, p []string, f func([]string, map[string]string)) {
	w := labelWalk{path: make([]pathElem, 0, 16)}
	for _, e := range p {
		w.path = append(w.path, pathElem{key: e, index: -1})
	}
	w.walk(x)
	sort.SliceStable(w.found, func(i, j int) bool { return lessPath(w.found[i].path, w.found[j].path) })
	for _, l := range w.found {
		f(l.strings(), stringMap(l.labels))
	}
}

// pathElem is a map key, or a list index when index >= 0.
type pathElem struct {
	key   string
	index int
}

type foundLabels struct {
	path   []pathElem
	labels map[string]any
}

// strings is the path as checkNames reports it, an index as "[i]".
func (l foundLabels) strings() []string {
	out := make([]string, len(l.path))
	for i, e := range l.path {
		if e.index >= 0 {
			out[i] = fmt.Sprintf("[%d]", e.index)
		} else {
			out[i] = e.key
		}
	}
	return out
}

type labelWalk struct {
	path  []pathElem
	found []foundLabels
}

func (w *labelWalk) walk(x any) {
	switch t := x.(type) {
	case map[string]any:
		parentIsMetadata := len(w.path) > 0 && w.path[len(w.path)-1].index < 0 && w.path[len(w.path)-1].key == "metadata"
		for k, v := range t {
			w.path = append(w.path, pathElem{key: k, index: -1})
			if m, ok := v.(map[string]any); ok && (k == "matchLabels" || (k == "labels" && parentIsMetadata)) {
				w.found = append(w.found, foundLabels{path: append([]pathElem(nil), w.path...), labels: m})
			} else {
				w.walk(v)
			}
			w.path = w.path[:len(w.path)-1]
		}
	case []any:
		for i, e := range t {
			w.path = append(w.path, pathElem{index: i})
			w.walk(e)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// lessPath orders paths as a walk through sorted keys and list indexes
// meets them: siblings are all keys or all indexes.
func lessPath(a, b []pathElem) bool {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.index >= 0 && y.index >= 0:
			if x.index != y.index {
				return x.index < y.index
			}
		case x.key != y.key:
			return x.key < y.key
		}
	}
	return len(a) < len(b)
}

// stringMap keeps the string values of m; a value of another type is the
// schema check's to refuse.
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func fieldPath(p []string) *field.Path {
	var fp *field.Path
	for _, e := range p {
		switch {
		case fp == nil:
			fp = field.NewPath(e)
		case strings.HasPrefix(e, "["):
			var i int
			fmt.Sscanf(e, "[%d]", &i)
			fp = fp.Index(i)
		default:
			fp = fp.Child(e)
		}
	}
	return fp
}

// cuePath turns a field path (spec.template.metadata.labels[app]) into a
// CUE path, as far as it goes.
func cuePath(s string) cue.Path {
	var sels []cue.Selector
	for _, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			sels = append(sels, cue.Str(name))
		}
		if rest != "" {
			var i int
			if _, err := fmt.Sscanf(rest, "%d]", &i); err == nil {
				sels = append(sels, cue.Index(i))
			} else {
				sels = append(sels, cue.Str(strings.TrimSuffix(rest, "]")))
			}
		}
	}
	return cue.MakePath(sels...)
}

// ScopeFunc reports whether objects of gk are namespaced. known is false
// when the kind is not known to the caller.
type ScopeFunc func(gk schema.GroupKind) (namespaced, known bool)

// clusterScoped lists the built-in cluster-scoped kinds, so that an offline
// render refuses them as the controller does (it asks the API server).
var clusterScoped = map[schema.GroupKind]bool{}

func init() {
	for _, gk := range []string{
		"Namespace", "Node", "PersistentVolume", "ComponentStatus",
		"ClusterRole.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io",
		"CustomResourceDefinition.apiextensions.k8s.io", "APIService.apiregistration.k8s.io",
		"ValidatingWebhookConfiguration.admissionregistration.k8s.io",
		"MutatingWebhookConfiguration.admissionregistration.k8s.io",
		"ValidatingAdmissionPolicy.admissionregistration.k8s.io",
		"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io",
		"MutatingAdmissionPolicy.admissionregistration.k8s.io",
		"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io",
		"StorageClass.storage.k8s.io", "CSIDriver.storage.k8s.io", "CSINode.storage.k8s.io",
		"VolumeAttachment.storage.k8s.io", "VolumeAttributesClass.storage.k8s.io",
		"PriorityClass.scheduling.k8s.io", "RuntimeClass.node.k8s.io", "IngressClass.networking.k8s.io",
		"IPAddress.networking.k8s.io", "ServiceCIDR.networking.k8s.io",
		"CertificateSigningRequest.certificates.k8s.io", "ClusterTrustBundle.certificates.k8s.io",
		"FlowSchema.flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io",
		"DeviceClass.resource.k8s.io", "ResourceSlice.resource.k8s.io",
		"TokenReview.authentication.k8s.io", "SelfSubjectReview.authentication.k8s.io",
		"SubjectAccessReview.authorization.k8s.io", "SelfSubjectAccessReview.authorization.k8s.io",
		"SelfSubjectRulesReview.authorization.k8s.io",
	} {
		clusterScoped[schema.ParseGroupKind(gk)] = true
	}
}

// BuiltinScope knows the scope of Kubernetes' built-in kinds; other kinds
// are unknown.
func BuiltinScope(gk schema.GroupKind) (namespaced, known bool) {
	if clusterScoped[gk] {
		return false, true
	}
	return true, gk.Group == "" || strings.HasSuffix(gk.Group, ".k8s.io") || !strings.Contains(gk.Group, ".")
}

// KindSet is an administrator's allow-list of child kinds.
type KindSet map[schema.GroupKind]bool

// DefaultAllowedKinds are the namespaced workload kinds a template may
// create unless the administrator says otherwise. Secrets, RBAC and anything
// that grants access are left out on purpose.
const DefaultAllowedKinds = "ConfigMap,Service,Pod,PersistentVolumeClaim,ServiceAccount," +
	"Deployment.apps,StatefulSet.apps,DaemonSet.apps,Job.batch,CronJob.batch," +
	"Ingress.networking.k8s.io,NetworkPolicy.networking.k8s.io,PodDisruptionBudget.policy," +
	"HorizontalPodAutoscaler.autoscaling"

// ParseKindSet parses a comma-separated list of Kind or Kind.group.
func ParseKindSet(s string) (KindSet, error) {
	set := KindSet{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		gk := schema.ParseGroupKind(f)
		if gk.Kind == "" || gk.Kind == "*" || strings.Contains(f, "*") {
			return nil, fmt.Errorf("allowed kinds: %q is not a Kind or Kind.group (no wildcards)", f)
		}
		set[gk] = true
	}
	return set, nil
}

// MustKindSet is ParseKindSet for constants.
func MustKindSet(s string) KindSet {
	set, err := ParseKindSet(s)
	if err != nil {
		panic(err)
	}
	return set
}

// String lists the set as ParseKindSet reads it, sorted.
func (s KindSet) String() string {
	var out []string
	for gk := range s {
		out = append(out, gk.String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
