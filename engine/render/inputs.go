package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// Inputs is everything one render reads. Render and the digest that tells
// a reconciler it may reuse a previous render are both computed from it, so
// that an input cannot reach one and not the other.
//
// To add an input: add an exported field here and read it in
// RenderInputs. Digest hashes every field by reflection, so the new field
// is covered at once (TestDigestCoversEveryInput fails otherwise): a
// *unstructured.Unstructured, a map[string]*unstructured.Unstructured or
// the map[string]Referenced of references is hashed whole, any other type
// as its JSON encoding. When the template reads
// only part of it (as for Observed), hash only that part in inputView.
type Inputs struct {
	// Kind is the compiled template; its Revision stands for it.
	Kind *template.Kind
	// Parent is the CR.
	Parent *unstructured.Unstructured
	// Observed are the live children by child id; nil on a first render.
	Observed map[string]*unstructured.Unstructured
	// Referenced are the objects the template's references resolved to,
	// keyed by reference id (Resolve, references.go).
	Referenced map[string]Referenced
}

// Digest identifies the inputs of a render: two Inputs with the same
// Digest render to the same Result (but for Ready when the kind leaves it
// to the engine: see Reuse).
type Digest [sha256.Size]byte

// Digest hashes what the render reads of in: the template revision, the
// parent's fields that the render and the template read, and the observed
// paths the template reads (template.Reads) and the referenced objects
// (referencedView). ok is false when an input
// cannot be hashed; the render must then run.
func (in Inputs) Digest() (d Digest, ok bool) {
	h := hasherPool.Get().(*hasher)
	defer hasherPool.Put(h)
	h.b = h.b[:0]
	v := reflect.ValueOf(in)
	t := v.Type()
	for i := range t.NumField() {
		name := t.Field(i).Name
		h.str(name)
		if !h.value(inputView(in, name, v.Field(i).Interface())) {
			return d, false
		}
	}
	return sha256.Sum256(h.b), true
}

// inputView is what of the input name (field of Inputs) a render reads.
func inputView(in Inputs, name string, x any) any {
	switch t := x.(type) {
	case *template.Kind:
		if t == nil {
			return nil
		}
		return []any{t.Name, t.Revision}
	case *unstructured.Unstructured:
		if t == nil {
			return nil
		}
		if name == "Parent" {
			return parentView(in.Kind, t)
		}
		return t.Object
	case map[string]*unstructured.Unstructured:
		out := make(map[string]any, len(t))
		for id, o := range t {
			if name == "Observed" {
				out[id] = projectObserved(in.Kind, id, o.Object)
			} else {
				out[id] = o.Object
			}
		}
		return out
	case map[string]Referenced:
		out := make(map[string]any, len(t))
		for id, r := range t {
			objs := make([]any, len(r.Objects))
			for i, o := range r.Objects {
				objs[i] = referencedView(o)
			}
			out[id] = map[string]any{"list": r.List, "objects": objs}
		}
		return out
	}
	b, err := json.Marshal(x)
	if err != nil {
		return unhashable{}
	}
	return string(b)
}

type unhashable struct{}

// referencedView is what stands for a referenced object in the digest: its
// identity and resourceVersion when it has them (an object read from the
// API server: every change of it changes its resourceVersion), so that the
// digest of a CR's inputs is known from the objects' metadata alone and a
// reconciler needs the whole object only to render; else the object.
func referencedView(o *unstructured.Unstructured) any {
	if o.GetUID() == "" || o.GetResourceVersion() == "" {
		return o.Object
	}
	return []any{o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName(), string(o.GetUID()), o.GetResourceVersion()}
}

// parentView is what a render reads of the CR: its identity (the engine
// sets it on children), its spec (checked against #Spec), the immutable
// values recorded in its status, and the metadata the template reads.
func parentView(k *template.Kind, p *unstructured.Unstructured) map[string]any {
	v := parentValue(p)
	if k != nil && k.Reads != nil && !k.Reads.Parent.All {
		md := v["metadata"].(map[string]any)
		read := k.Reads.Parent.Sub["metadata"]
		for _, f := range []string{"generation", "labels", "annotations"} {
			if _, has := md[f]; has && (read == nil || !read.All && read.Sub[f] == nil) {
				delete(md, f)
			}
		}
	}
	if k != nil && len(k.Immutable) > 0 {
		recorded, _, _ := unstructured.NestedMap(p.Object, "status", StatusImmutable)
		v["immutable"] = recorded
	}
	return v
}

var hasherPool = sync.Pool{New: func() any { return &hasher{} }}

// hasher writes values into b with a type tag each, so that no two
// different values write the same bytes; map keys in sorted order.
type hasher struct{ b []byte }

func (h *hasher) str(s string) {
	h.b = binary.AppendUvarint(h.b, uint64(len(s)))
	h.b = append(h.b, s...)
}

func (h *hasher) value(x any) bool {
	switch t := x.(type) {
	case nil:
		h.b = append(h.b, 'n')
	case bool:
		if t {
			h.b = append(h.b, 't')
		} else {
			h.b = append(h.b, 'f')
		}
	case string:
		h.b = append(h.b, 's')
		h.str(t)
	case int64:
		h.b = append(h.b, 'i')
		h.b = binary.AppendVarint(h.b, t)
	case int:
		h.b = append(h.b, 'i')
		h.b = binary.AppendVarint(h.b, int64(t))
	case float64:
		h.b = append(h.b, 'g')
		h.b = binary.BigEndian.AppendUint64(h.b, math.Float64bits(t))
	case []any:
		return h.list(t)
	case []string:
		h.b = append(h.b, 'l')
		h.b = binary.AppendUvarint(h.b, uint64(len(t)))
		for _, e := range t {
			h.b = append(h.b, 's')
			h.str(e)
		}
	case map[string]any:
		return h.object(t)
	case map[string]string:
		h.b = append(h.b, 'm')
		h.b = binary.AppendUvarint(h.b, uint64(len(t)))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			h.str(k)
			h.b = append(h.b, 's')
			h.str(t[k])
		}
	default:
		// json.Number and other scalars an object may hold.
		h.b = append(h.b, 'x')
		h.str(fmt.Sprintf("%T:%v", t, t))
		switch reflect.ValueOf(t).Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Struct, reflect.Interface:
			return false
		}
	}
	return true
}

// list writes the elements of t; false when one of them cannot be written.
func (h *hasher) list(t []any) bool {
	h.b = append(h.b, 'l')
	h.b = binary.AppendUvarint(h.b, uint64(len(t)))
	for _, e := range t {
		if !h.value(e) {
			return false
		}
	}
	return true
}

// object writes the fields of t, keys sorted; false when a value cannot
// be written.
func (h *hasher) object(t map[string]any) bool {
	h.b = append(h.b, 'm')
	h.b = binary.AppendUvarint(h.b, uint64(len(t)))
	keys := make([]string, 0, 32) // on the stack for most objects
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.str(k)
		if !h.value(t[k]) {
			return false
		}
	}
	return true
}

// Reuse returns a previous Result of in's render for in: the same, but
// for Ready when the kind has no `ready` field, which the engine computes
// from the whole live objects (kstatus), not from what the digest covers.
func Reuse(in Inputs, prev *Result) *Result {
	if !prev.ReadyByDefault {
		return prev
	}
	res := *prev
	res.Ready = defaultReady(res.Children, in.Observed)
	return &res
}
