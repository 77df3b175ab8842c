// What goes into an evaluation and where it runs: Inputs, everything one
// render reads, and their Digest, by which a reconciler reuses a previous
// render (Reuse); the Evaluator that runs a reconcile's evaluations
// (InProcess here, the operator's worker processes elsewhere); Render and
// RenderInputs, which run the render within its budget; Packed, a Result
// kept compactly as a memo keeps it; and ValueBytes, the size of a value.
//
// It must not decide what a render produces (render.go does): an input
// added here must reach both the render and the Digest, and a Result must
// come out of Reuse and Unpack as the render gave it.

package render

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
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

// Evaluator runs the CUE evaluations of a reconcile: the render of a CR
// and the evaluation of its references. The operator's runs them in
// worker processes it can kill (package worker); InProcess runs them in
// the calling process, for trusted input only: CUE cannot be stopped, and
// one evaluation can take the whole process down.
type Evaluator interface {
	Render(ctx context.Context, in Inputs, opts Options) (*Result, error)
	References(ctx context.Context, k *template.Kind, parent *unstructured.Unstructured, opts Options) ([]Reference, error)
}

// PackedEvaluator is an Evaluator whose renders come packed, as a worker
// process sends them: RenderPacked gives the Result and its Packed, which
// a memo keeps as it came instead of packing the Result again.
type PackedEvaluator interface {
	Evaluator
	RenderPacked(ctx context.Context, in Inputs, opts Options) (*Result, *Packed, error)
}

// RenderPacked renders in with ev and gives the result packed too: as ev
// sent it when ev is a PackedEvaluator, else packed here; nil when the
// result holds a value Pack cannot keep.
func RenderPacked(ctx context.Context, ev Evaluator, in Inputs, opts Options) (*Result, *Packed, error) {
	if pe, ok := ev.(PackedEvaluator); ok {
		return pe.RenderPacked(ctx, in, opts)
	}
	res, err := ev.Render(ctx, in, opts)
	if err != nil {
		return res, nil, err
	}
	p, ok := Pack(res)
	if !ok {
		return res, nil, nil
	}
	return res, p, nil
}

// InProcess evaluates in the calling process, within each evaluation's
// budget (RenderInputs, References).
type InProcess struct{}

// Render is RenderInputs.
func (InProcess) Render(_ context.Context, in Inputs, opts Options) (*Result, error) {
	return RenderInputs(in, opts)
}

// References is References.
func (InProcess) References(_ context.Context, k *template.Kind, parent *unstructured.Unstructured, opts Options) ([]Reference, error) {
	return References(k, parent, opts)
}

// ObservedView is what the template of k reads of the observed children:
// all that a render evaluates of them but for the engine's default
// readiness, which Reuse computes from the whole objects. An evaluator
// that copies the inputs elsewhere copies this view, then passes the
// result through Reuse with the whole inputs. The render digest covers the
// same view (Inputs.Digest).
func ObservedView(k *template.Kind, observed map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	if observed == nil {
		return nil
	}
	out := make(map[string]*unstructured.Unstructured, len(observed))
	for id, o := range observed {
		out[id] = &unstructured.Unstructured{Object: projectObserved(k, id, o.Object)}
	}
	return out
}

// Render evaluates k for parent and the observed children (keyed by child
// id; nil on a first render). A returned error is an *Error when the spec or
// the template is at fault, the render's budget included; a *budget.Busy
// when too many renders of k that ran out of budget are still running
// (retry later).
//
// The render runs within opts.Budget: when it runs out, Render returns at
// once and the evaluation, which CUE cannot stop, runs on abandoned
// (package budget).
func Render(k *template.Kind, parent *unstructured.Unstructured, observed map[string]*unstructured.Unstructured, opts Options) (*Result, error) {
	return RenderInputs(Inputs{Kind: k, Parent: parent, Observed: observed}, opts)
}

// RenderInputs is Render with every input of the render: the observed
// children and the referenced objects (references.go).
func RenderInputs(in Inputs, opts Options) (*Result, error) {
	k, parent := in.Kind, in.Parent
	var res *Result
	err := opts.Budget.Run(k.Name, func(t *budget.Tracker) error {
		opts.tracker = t
		var err error
		res, err = evaluate(k, parent, in, opts)
		if err != nil {
			err = observedHint(k, parent, in, err)
		}
		return err
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return nil, budgetError(k, ex)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// budgetError says which budget ran out, what was being evaluated and where
// in the template the evaluation can grow.
func budgetError(k *template.Kind, ex *budget.Exceeded) *Error {
	msg := fmt.Sprintf("%s: render %s (%s)", k.Name, ex.Error(), BudgetRevision(k))
	return &Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{msg + template.HotspotHint(k.Hotspots)}}
}

// BudgetRevision is how a budget Error names the template revision it ran
// out on, so that a reconciler can tell that the CR would only run out again.
func BudgetRevision(k *template.Kind) string { return "template revision " + k.Revision }

// Packed is a Result kept compactly, for a reconciler to reuse: its
// objects encoded in one byte slice (about a fifth of the memory of the
// maps; docs/benchmarks.md).
// Unpack builds a fresh Result each time, so callers may not share maps.
type Packed struct {
	data []byte
	// children are the children without their objects (id, policy, wave,
	// readiness), which are in data.
	children   []Child
	ready      Readiness
	conditions []Condition // never written after Pack
}

// Pack encodes res; ok is false when an object holds a value other than
// what unstructured objects hold (maps, lists, strings, int64, float64,
// bools, nulls).
func Pack(res *Result) (p *Packed, ok bool) {
	e := &encoder{}
	p = &Packed{ready: Readiness{res.Ready, res.ReadyByDefault}, children: make([]Child, len(res.Children)), conditions: slices.Clone(res.Conditions)}
	e.b = binary.AppendUvarint(e.b, uint64(len(res.Children)))
	for i, c := range res.Children {
		p.children[i] = c
		p.children[i].Object = nil
		if c.ReadyWhen != nil {
			p.children[i].ReadyWhen = ptrTo(*c.ReadyWhen)
		}
		if !e.value(c.Object.Object) {
			return nil, false
		}
	}
	if !e.value(res.Status) || !e.value(res.Immutable) {
		return nil, false
	}
	p.data = append([]byte(nil), e.b...)
	return p, true
}

// Size is about how many bytes p holds.
func (p *Packed) Size() int {
	n := int(unsafe.Sizeof(*p)) + cap(p.data) + cap(p.children)*int(unsafe.Sizeof(Child{}))
	for _, c := range p.conditions {
		n += len(c.Type) + len(c.Status) + len(c.Reason) + len(c.Message)
	}
	for _, c := range p.children {
		n += len(c.ID)
		if c.ReadyWhen != nil {
			n++
		}
	}
	return n
}

// Unpack decodes p into a new Result. Its strings point into p's bytes,
// which are never written after Pack.
func (p *Packed) Unpack() *Result {
	d := &decoder{b: p.data}
	n := int(d.uvarint())
	res := &Result{Ready: p.ready.Ready, ReadyByDefault: p.ready.ByDefault, Children: make([]Child, n), Conditions: slices.Clone(p.conditions)}
	for i := range n {
		obj, _ := d.value().(map[string]any)
		c := p.children[i]
		if c.ReadyWhen != nil {
			c.ReadyWhen = ptrTo(*c.ReadyWhen)
		}
		c.Object = &unstructured.Unstructured{Object: obj}
		res.Children[i] = c
	}
	res.Status, _ = d.value().(map[string]any)
	res.Immutable, _ = d.value().(map[string]any)
	return res
}

// Readiness is a Result's Ready and ReadyByDefault.
type Readiness struct{ Ready, ByDefault bool }

// Parts are what p holds, for a worker to send: the packed objects, status
// and immutable values (data), the children without their objects, Ready
// and the conditions. PackedOf takes them back.
func (p *Packed) Parts() (data []byte, children []Child, ready Readiness, conditions []Condition) {
	return p.data, p.children, p.ready, p.conditions
}

// PackedOf is the Packed of parts that another process sent (Parts),
// checked whole before anything is built of them: data must hold one
// object per child, then the status and the immutable values, and nothing
// else. data is kept: the caller must not write it afterwards.
func PackedOf(data []byte, children []Child, ready Readiness, conditions []Condition) (*Packed, error) {
	c := &checker{b: data}
	if n, err := c.uvarint(); err != nil || n != uint64(len(children)) {
		return nil, fmt.Errorf("packed result: %d objects for %d children (%v)", n, len(children), err)
	}
	for i := range children {
		if c.off < len(data) && data[c.off] != tagMap {
			return nil, fmt.Errorf("packed result: child %d is not an object", i)
		}
		if err := c.value(0, true); err != nil {
			return nil, fmt.Errorf("packed result: child %d: %w", i, err)
		}
		children[i].Object = nil
	}
	for _, what := range []string{"status", "immutable"} {
		if err := c.value(0, true); err != nil {
			return nil, fmt.Errorf("packed result: %s: %w", what, err)
		}
	}
	if c.off != len(data) {
		return nil, fmt.Errorf("packed result: %d bytes after its values", len(data)-c.off)
	}
	return &Packed{data: data, children: children, ready: ready, conditions: conditions}, nil
}

// maxPackedDepth bounds how deep a packed value may nest (as unstructured
// decodes JSON).
const maxPackedDepth = 10000

// checker walks packed values as decoder reads them, with every length
// and offset checked.
type checker struct {
	b   []byte
	off int
}

func (c *checker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(c.b[c.off:])
	if n <= 0 {
		return 0, errors.New("bad length")
	}
	c.off += n
	return v, nil
}

// count is a length that at most the rest of the bytes can hold, each
// element taking one byte or more.
func (c *checker) count() (int, error) {
	n, err := c.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(c.b)-c.off) {
		return 0, fmt.Errorf("length %d beyond the %d bytes left", n, len(c.b)-c.off)
	}
	return int(n), nil
}

func (c *checker) str() error {
	n, err := c.count()
	c.off += n
	return err
}

// value checks one value; top asks for a map (or a nil one, or nil).
func (c *checker) value(depth int, top bool) error {
	if depth > maxPackedDepth {
		return errors.New("nested too deep")
	}
	if c.off >= len(c.b) {
		return errors.New("truncated")
	}
	tag := c.b[c.off]
	c.off++
	if top && tag != tagMap && tag != tagNilMap && tag != tagNil {
		return fmt.Errorf("tag %d where an object belongs", tag)
	}
	switch tag {
	case tagNil, tagFalse, tagTrue, tagNilMap:
		return nil
	case tagInt:
		if _, n := binary.Varint(c.b[c.off:]); n <= 0 {
			return errors.New("bad integer")
		} else {
			c.off += n
		}
		return nil
	case tagFloat:
		if len(c.b)-c.off < 8 {
			return errors.New("truncated float")
		}
		c.off += 8
		return nil
	case tagString:
		return c.str()
	case tagList, tagMap:
		n, err := c.count()
		if err != nil {
			return err
		}
		for range n {
			if tag == tagMap {
				if err := c.str(); err != nil {
					return err
				}
			}
			if err := c.value(depth+1, false); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown tag %d", tag)
}

const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagList
	tagMap
	tagNilMap
)

type encoder struct{ b []byte }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) value(x any) bool {
	switch t := x.(type) {
	case nil:
		e.b = append(e.b, tagNil)
	case bool:
		if t {
			e.b = append(e.b, tagTrue)
		} else {
			e.b = append(e.b, tagFalse)
		}
	case int64:
		e.b = append(e.b, tagInt)
		e.b = binary.AppendVarint(e.b, t)
	case float64:
		e.b = append(e.b, tagFloat)
		e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(t))
	case string:
		e.b = append(e.b, tagString)
		e.str(t)
	case []any:
		e.b = append(e.b, tagList)
		e.b = binary.AppendUvarint(e.b, uint64(len(t)))
		for _, v := range t {
			if !e.value(v) {
				return false
			}
		}
	case map[string]any:
		if t == nil {
			e.b = append(e.b, tagNilMap)
			return true
		}
		e.b = append(e.b, tagMap)
		e.b = binary.AppendUvarint(e.b, uint64(len(t)))
		for k, v := range t {
			e.str(k)
			if !e.value(v) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.off:])
	d.off += n
	return v
}

func (d *decoder) str() string {
	n := int(d.uvarint())
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.b[d.off], n)
	d.off += n
	return s
}

func (d *decoder) value() any {
	tag := d.b[d.off]
	d.off++
	switch tag {
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		v, n := binary.Varint(d.b[d.off:])
		d.off += n
		return v
	case tagFloat:
		v := math.Float64frombits(binary.BigEndian.Uint64(d.b[d.off:]))
		d.off += 8
		return v
	case tagString:
		return d.str()
	case tagList:
		n := int(d.uvarint())
		l := make([]any, n)
		for i := range l {
			l[i] = d.value()
		}
		return l
	case tagMap:
		n := int(d.uvarint())
		m := make(map[string]any, min(n, 64)) // n may count repeated keys (PackedOf checks no more)
		for range n {
			k := d.str()
			m[k] = d.value()
		}
		return m
	case tagNilMap:
		return map[string]any(nil)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// ValueBytes is about how many bytes an unstructured value holds: its
// strings and keys, and a word for every other value.
func ValueBytes(v any) int {
	switch t := v.(type) {
	case string:
		return len(t)
	case map[string]any:
		n := 0
		for k, x := range t {
			n += len(k) + ValueBytes(x)
		}
		return n
	case []any:
		n := 0
		for _, x := range t {
			n += ValueBytes(x)
		}
		return n
	}
	return 8
}
