package reconcile

import (
	"maps"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
			m["metadata"] = metaView(om) // metaview.go: without reflection
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
