package reconcile

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

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
// metadata, that a reconcile reads; nil when observe must convert the
// children whole: the template's reads are unknown or take whole objects,
// or the kind's Ready comes from kstatus over whole children (computed in
// the render and in the settled check's fingerprint).
func (r *run) viewKeys() map[string]bool {
	reads := r.kind.Reads
	if reads == nil || reads.Observed.All || !r.kind.Value.LookupPath(template.PathReady).Exists() {
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

// partial is a shallow copy of obj, a typed object, with every top-level
// field but its type, its metadata and keep set to its zero value; obj and
// what it points to are not touched. An object that is not a pointer to a
// struct is returned as is.
func partial(obj runtime.Object, keep map[string]bool) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	t := v.Elem().Type()
	cp := reflect.New(t)
	s := cp.Elem()
	s.Set(v.Elem())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Anonymous || name == "" || name == "-" || name == "metadata" || keep[name] {
			continue
		}
		s.Field(i).SetZero()
	}
	return cp.Interface().(runtime.Object)
}

// whole is o, a child observe listed, converted whole: o itself unless
// observe converted only its partial view. The conversion is kept for the
// rest of the reconcile. A conversion that fails (it succeeded in part)
// leaves o.
func (r *run) whole(o *unstructured.Unstructured) *unstructured.Unstructured {
	src, ok := r.sources[o]
	if o == nil || !ok {
		return o
	}
	if w, ok := r.wholes[o]; ok {
		return w
	}
	w, err := toUnstructured(src, o.GroupVersionKind()) // src is the list's copy, converted once
	if err != nil {
		w = o
	}
	if r.wholes == nil {
		r.wholes = map[*unstructured.Unstructured]*unstructured.Unstructured{}
	}
	r.wholes[o] = w
	return w
}

// wholeLive is the live object of c (r.live), whole.
func (r *run) wholeLive(c render.Child) *unstructured.Unstructured {
	return r.whole(r.live(c))
}

// wholeObserved is what the template sees of the children, each whole.
func (r *run) wholeObserved() map[string]*unstructured.Unstructured {
	if len(r.sources) == 0 {
		return r.observed
	}
	out := make(map[string]*unstructured.Unstructured, len(r.observed))
	for id, o := range r.observed {
		out[id] = r.whole(o)
	}
	return out
}
