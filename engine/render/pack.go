package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
