package render

import (
	"sort"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
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
	// DataKinds are the kinds that hold data (datakinds.go): released, not
	// deleted, unless the template says otherwise; nil means
	// DefaultDataKinds.
	DataKinds KindSet
	// MaxChildren bounds the number of children; 0 means DefaultMaxChildren.
	MaxChildren int
	// Budget bounds each render in time and memory (budget.go); the zero
	// value is the defaults.
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
	// Policy is the child's lifecycle policy (policies.go).
	Policy Policy
	// Wave is the child's wave (waves.go): 0 unless the template says.
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
	// Conditions are the template's own conditions (conditions.go), sorted
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
