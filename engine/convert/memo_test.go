package convert_test

// The memo of converted specs (memo.go): a conversion found in it is the
// one a fresh converter returns, whatever the input.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
)

// TestMemoSameAsFreshConversion: a conversion found in the converter's
// memo is the one a converter that never converted anything returns, for
// specs with and without defaults, at both versions, with an annotation
// carrying the target's spec (kept or stale); and a caller changing a
// result does not change the next.
func TestMemoSameAsFreshConversion(t *testing.T) {
	objs := []string{
		v1Obj,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"d","namespace":"t"},"spec":{}}`,
		`{"apiVersion":"cache.example.com/v2","kind":"RedisCluster","metadata":{"name":"e","namespace":"t"},"spec":{"size":4,"redisVersion":"7.2"}}`,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"f","namespace":"t",
			"annotations":{"cueop.dev/conversion.v2":"{\"size\":4,\"redisVersion\":\"7.2\"}"}},"spec":{"replicas":4,"version":"7.2"}}`,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"g","namespace":"t",
			"annotations":{"cueop.dev/conversion.v2":"{\"size\":9,\"redisVersion\":\"7.2\"}"}},"spec":{"replicas":4,"version":"7.2"}}`,
	}
	for _, lenient := range []bool{false, true} {
		c := redis(t)
		if lenient {
			c = c.Lenient()
		}
		for _, src := range objs {
			in := object(t, src)
			for _, to := range []string{"v1", "v2"} {
				first := mustConvert(t, c, in, to)
				first.Object["spec"].(map[string]any)["injected"] = "by the caller"
				again := mustConvert(t, c, in, to)
				fresh := redis(t)
				if lenient {
					fresh = fresh.Lenient()
				}
				want := mustConvert(t, fresh, in, to)
				if !reflect.DeepEqual(again.Object, want.Object) {
					t.Errorf("lenient %v, %s to %s: from the memo %v, fresh %v", lenient, in.GetName(), to, again.Object, want.Object)
				}
			}
		}
	}
}

// TestMemoKeepsStrictAndLenientApart: a spec its schema refuses converts
// leniently (the webhook's converter) and is still refused by the strict
// converter derived from the same one afterwards, whose memo it shares.
func TestMemoKeepsStrictAndLenientApart(t *testing.T) {
	c := redis(t)
	old := object(t, `{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"old","namespace":"t"},
		"spec":{"replicas":3,"version":"7.0","minReady":5}}`)
	mustConvert(t, c.Lenient(), old, "v2")
	mustConvert(t, c.Lenient(), old, "v2")
	var se *convert.SpecError
	if _, err := c.Convert(old, "v2"); !errors.As(err, &se) {
		t.Fatalf("strict Convert after lenient ones = %v, want a SpecError", err)
	}
}

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

const passthrough = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {r?: number}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {r?: number}
	toHub: {in: spec: _, out: spec: in.spec}
	fromHub: {in: spec: _, out: spec: in.spec}
}
`

// TestMemoKeepsNumberTypes: cueop vet's order, a sample at v1 then the same
// at v2 on one converter, passes as on a fresh one: a float CUE writes as
// 1E+18 stays a float when found in the memo
// (crdgen.AtLimits of r: number & <=1e18 in both versions).
func TestMemoKeepsNumberTypes(t *testing.T) {
	c := mustLoad(t, passthrough)
	spec := func() map[string]any { return map[string]any{"r": float64(1e18)} }
	if err := c.CheckRoundTrip(spec(), "v1", "v2"); err != nil {
		t.Fatalf("v1 via v2: %v", err)
	}
	if err := c.CheckRoundTrip(spec(), "v2", "v1"); err != nil {
		t.Errorf("v2 via v1, after v1 via v2 on the same converter: %v", err)
	}
	f, _ := load(t, passthrough)
	if err := f.CheckRoundTrip(spec(), "v2", "v1"); err != nil {
		t.Errorf("v2 via v1, fresh converter: %v", err)
	}
}

// TestMemoIntToComputedFloat: an int whose conversion computes a float.
func TestMemoIntToComputedFloat(t *testing.T) {
	for _, n := range []int64{1 << 60, 1<<53 + 1, 7, 123456789012345678} {
		c, f := numsConv(t), numsConv(t)
		mk := func() map[string]any { return map[string]any{"r": n} }
		conv(c, appObj("v1", mk(), true), "v2")
		hit := conv(c, appObj("v1", mk(), true), "v2")
		fresh := conv(f, appObj("v1", mk(), true), "v2")
		if !same(hit, fresh) {
			t.Errorf("r=%d: hit %v, fresh %v", n, hit, fresh)
		}
	}
}

// TestMemoFloatsAsFresh: floats and ints around the thresholds of their
// JSON forms convert from the memo as they do fresh.
func TestMemoFloatsAsFresh(t *testing.T) {
	var xs []any
	for e := 0; e <= 22; e++ {
		xs = append(xs, math.Pow(10, float64(e)), 1.5*math.Pow(10, float64(e)), int64(math.Pow(10, float64(e))/3)*3+1)
	}
	xs = append(xs, int64(1<<60), int64(1<<53+1), int64(123456789012345678), 0.1, 1e-7, 2.5e-300, math.MaxFloat64)
	nd, nj := 0, 0
	for _, x := range xs {
		c, f := numsConv(t), numsConv(t)
		mk := func() map[string]any { return map[string]any{"r": x} }
		conv(c, appObj("v1", mk(), true), "v2")
		hit := conv(c, appObj("v1", mk(), true), "v2")
		fresh := conv(f, appObj("v1", mk(), true), "v2")
		if !same(hit, fresh) {
			nd++
			a, _ := hit.obj.MarshalJSON()
			b, _ := fresh.obj.MarshalJSON()
			if string(a) != string(b) {
				nj++
				t.Errorf("r=%v JSON differs: %s vs %s", x, a, b)
			}
		}
	}
	if nd > 0 {
		t.Errorf("%d of %d differ as Go values, %d as JSON", nd, len(xs), nj)
	}
}

const tiered = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: int, tier?: string}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {size: *3 | int, tier: *"gold" | string}
	toHub: {in: spec: _, out: spec: {replicas: in.spec.size, if in.spec.tier != _|_ {tier: in.spec.tier}}}
	fromHub: {in: spec: _, out: spec: {size: in.spec.replicas, if in.spec.tier != _|_ {tier: in.spec.tier}}}
}
`

// As the webhook decodes a review's object (unstructured.UnmarshalJSON).
func decoded(t *testing.T, s string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMemoNotPoisonedByAFloat: a review sent with size 3.0 (not the API
// server: anyone who reaches the webhook port) does not change the
// conversion of the same spec with size 3 that follows.
func TestMemoNotPoisonedByAFloat(t *testing.T) {
	c, _ := load(t, tiered)
	f, _ := load(t, tiered)
	c, f = c.Lenient(), f.Lenient()
	attacker := `{"apiVersion":"apps.test.example/v2","kind":"App","metadata":{"name":"x","namespace":"t"},"spec":{"size":3.0}}`
	legit := `{"apiVersion":"apps.test.example/v2","kind":"App","metadata":{"name":"x","namespace":"t"},"spec":{"size":3}}`
	a := conv(c, decoded(t, attacker), "v1")
	got := conv(c, decoded(t, legit), "v1")
	want := conv(f, decoded(t, legit), "v1")
	if !same(got, want) {
		t.Errorf("attacker's: %v\nlegit after it: %v\nlegit fresh:    %v", a, got, want)
	}
}

const heavy = `package app
import "list"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: int}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {n: int, s?: int}
	toHub: {in: spec: _, out: spec: n: in.spec.n}
	fromHub: {in: spec: _, out: spec: {n: in.spec.n, s: list.Sum([for i in list.Range(0, in.spec.n, 1) {i * 2}])}}
}
`

// TestMemoKeepsNoConversionOverBudget: a conversion refused for its budget is
// not kept: retried, the same converter refuses it again, as a fresh one does
// (the budget's verdict comes after the evaluation returned).
func TestMemoKeepsNoConversionOverBudget(t *testing.T) {
	base, err := load(t, heavy)
	if err != nil || base == nil {
		t.Fatal(base, err)
	}
	c := base.WithBudget(budget.Budget{Memory: 4 << 20, Time: -1})
	obj := appObj("v1", map[string]any{"n": int64(20000)}, true)
	_, err1 := c.Convert(obj, "v2")
	var ex *budget.Exceeded
	if !errors.As(err1, &ex) {
		t.Fatalf("first conversion: %v, want Exceeded", err1)
	}
	budget.WaitAbandoned(t.Context(), "convert/app", 0) // its result, had it one, is in
	out, err2 := c.Convert(obj, "v2")
	_, err3 := func() (any, error) {
		f, _ := load(t, heavy)
		return f.WithBudget(budget.Budget{Memory: 4 << 20, Time: -1}).Convert(obj, "v2")
	}()
	// Its evaluations over budget end before the next test evaluates.
	defer budget.WaitAbandoned(t.Context(), "convert/app", 0)
	if err2 == nil || err3 == nil {
		t.Errorf("retry after a budget refusal: %v, err %v; fresh converter: err %v; want both refused", out, err2, err3)
	}
}

// TestMemoConcurrentCallers: converters derived from one (strict, lenient,
// budgets of their own) convert at once and change their results, under
// the race detector.
func TestMemoConcurrentCallers(t *testing.T) {
	c := redis(t)
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := c.WithBudget(budget.Budget{})
			if g%2 == 0 {
				cc = cc.Lenient()
			}
			for i := 0; i < 60; i++ {
				in := object(t, fmt.Sprintf(`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"a","namespace":"t"},"spec":{"replicas":%d,"version":"7.0"}}`, 1+i%5))
				out, err := cc.Convert(in, "v2")
				if err != nil {
					t.Error(err)
					return
				}
				out.Object["spec"].(map[string]any)["size"] = int64(99)
				back, err := cc.Convert(out, "v1")
				if err != nil {
					t.Error(err)
					return
				}
				back.Object["spec"].(map[string]any)["x"] = 1
			}
		}()
	}
	wg.Wait()
}
