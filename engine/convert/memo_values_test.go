package convert_test

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/convert"
)

const nums = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {r?: number, f?: float, i?: int, m?: {...}, l?: [...], n?: null | int, s?: string}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {r?: number, f?: float, i?: int, m?: {...}, l?: [...], n?: null | int, s?: string, half?: number}
	toHub: {in: spec: _, out: spec: {for k, v in in.spec if k != "half" {(k): v}}}
	fromHub: {in: spec: _, out: spec: {for k, v in in.spec {(k): v}, if in.spec.r != _|_ {half: in.spec.r / 2}}}
}
`

func numsConv(t *testing.T) *convert.Converter {
	c, err := load(t, nums)
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	return c
}

func appObj(version string, spec any, withSpec bool) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": "apps.test.example/" + version, "kind": "App", "metadata": map[string]any{"name": "x", "namespace": "t"}}
	if withSpec {
		o["spec"] = spec
	}
	return &unstructured.Unstructured{Object: o}
}

type res struct {
	obj *unstructured.Unstructured
	err error
}

func (r res) String() string {
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	return fmt.Sprintf("%#v", r.obj.Object["spec"]) + fmt.Sprintf(" ann=%v", r.obj.GetAnnotations())
}

func conv(c *convert.Converter, o *unstructured.Unstructured, to string) res {
	out, err := c.Convert(o, to)
	return res{out, err}
}

func same(a, b res) bool {
	if (a.err == nil) != (b.err == nil) {
		return false
	}
	if a.err != nil {
		return true
	}
	return reflect.DeepEqual(a.obj.Object, b.obj.Object)
}

// TestMemoHitSameAsFresh: for specs of every JSON type (ints past 2^53,
// floats, nested maps and lists, nulls, odd strings, no spec at all), both
// ways, strict and lenient, a memo hit and the conversion of its result back
// are what a converter that never converted anything returns.
func TestMemoHitSameAsFresh(t *testing.T) {
	specs := []any{
		map[string]any{"r": int64(3)},
		map[string]any{"r": float64(3)},
		map[string]any{"r": float64(0.1)},
		map[string]any{"r": float64(1e-7)},
		map[string]any{"r": float64(1e21)},
		map[string]any{"r": float64(1 << 60)},
		map[string]any{"f": float64(3)},
		map[string]any{"f": float64(2.5)},
		map[string]any{"i": int64(1<<53 + 1)},
		map[string]any{"i": int64(9223372036854775807)},
		map[string]any{"m": map[string]any{}},
		map[string]any{"m": map[string]any{"a": map[string]any{"b": []any{int64(1), float64(2.5), nil, map[string]any{}}}}},
		map[string]any{"l": []any{}},
		map[string]any{"l": []any(nil)},
		map[string]any{"n": nil},
		map[string]any{"s": "\x00<>&\u2028"},
		map[string]any{},
		nil,
		"notamap",
	}
	for _, lenient := range []bool{false, true} {
		for _, from := range []string{"v1", "v2"} {
			to := map[string]string{"v1": "v2", "v2": "v1"}[from]
			for i, s := range specs {
				for _, withSpec := range []bool{true, false} {
					if !withSpec && i > 0 {
						continue
					}
					mk := func() *unstructured.Unstructured { return appObj(from, s, withSpec) }
					c, f := numsConv(t), numsConv(t)
					if lenient {
						c, f = c.Lenient(), f.Lenient()
					}
					first := conv(c, mk(), to)
					hit := conv(c, mk(), to)
					fresh := conv(f, mk(), to)
					if !same(first, fresh) || !same(hit, fresh) {
						t.Errorf("lenient=%v %s->%s spec %#v (withSpec %v):\n first %v\n hit   %v\n fresh %v", lenient, from, to, s, withSpec, first, hit, fresh)
					}
					// and the hit's result converted back
					if hit.err == nil && fresh.err == nil {
						b1, b2 := conv(numsConv(t), hit.obj, from), conv(numsConv(t), fresh.obj, from)
						if !same(b1, b2) {
							t.Errorf("lenient=%v back %s->%s of spec %#v: from hit %v, from fresh %v", lenient, to, from, s, b1, b2)
						}
					}
				}
			}
		}
	}
}

// TestMemoTellsInputsApart: of two inputs that look alike (3 and 3.0, invalid
// UTF-8 and its replacement), the second converted after the first is
// what a fresh converter returns.
func TestMemoTellsInputsApart(t *testing.T) {
	pairs := [][2]map[string]any{
		{{"i": int64(3)}, {"i": float64(3)}},
		{{"f": int64(3)}, {"f": float64(3)}},
		{{"r": int64(3)}, {"r": float64(3)}},
		{{"r": float64(3)}, {"r": int64(3)}},
		{{"r": int64(1 << 60)}, {"r": float64(1 << 60)}},
		{{"s": "\xff"}, {"s": "\ufffd"}},
	}
	for _, lenient := range []bool{false, true} {
		for _, from := range []string{"v1", "v2"} {
			to := map[string]string{"v1": "v2", "v2": "v1"}[from]
			for _, p := range pairs {
				c, f := numsConv(t), numsConv(t)
				if lenient {
					c, f = c.Lenient(), f.Lenient()
				}
				conv(c, appObj(from, p[0], true), to)
				got := conv(c, appObj(from, p[1], true), to)
				want := conv(f, appObj(from, p[1], true), to)
				if !same(got, want) {
					t.Errorf("lenient=%v %s->%s: after %#v, %#v:\n memo  %v\n fresh %v", lenient, from, to, p[0], p[1], got, want)
				}
			}
		}
	}
}
