package reconcile

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// storedStatus is st as the API server stores it and the cache reads it back:
// decoded as the server decodes an apply (numbers to int64 or float64),
// encoded by encoding/json, decoded as unstructured.
func storedStatus(t *testing.T, st map[string]any) map[string]any {
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var server map[string]any
	if err := utiljson.Unmarshal(b, &server); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(server); err != nil {
		t.Fatal(err)
	}
	var read map[string]any
	if err := utiljson.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	return read
}

// TestSameStatusAfterItsOwnWrite: a status, once written and read back, is
// the same status. In process a kind's immutable values are json.Number as
// CUE writes them (a float field at 2 is "2.0", 1.50 is "1.50", 1e3 is
// "1e3"), and a status integer beyond int64 is a *big.Int: json.Marshal
// writes them as they are, the API server stores 2, 1.5, 1000, 1e+23. Were
// they compared as bytes alone, every reconcile would write the status
// again.
func TestSameStatusAfterItsOwnWrite(t *testing.T) {
	big1, _ := new(big.Int).SetString("100000000000000000000000", 10)
	for name, st := range map[string]map[string]any{
		"float immutable": {"immutable": map[string]any{"spec.ratio": json.Number("2.0")}, "observedGeneration": int64(1), "revision": "r"},
		"decimal":         {"immutable": map[string]any{"spec.ratio": json.Number("1.50")}, "revision": "r"},
		"exponent":        {"immutable": map[string]any{"spec.n": json.Number("1e3")}, "revision": "r"},
		"big int":         {"big": big1, "revision": "r"},
	} {
		old := storedStatus(t, st)
		if !sameStatus(old, st, nil) {
			a, _ := json.Marshal(st)
			b, _ := json.Marshal(old)
			t.Errorf("%s: written %s, read back %s: not the same status, written again on every reconcile", name, a, b)
		}
	}
}

// viaJSON is what jsonSame stands in for: both values encoded, decoded into
// any and compared.
func viaJSON(a, b any) (same, ok bool) {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false, false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false, false
	}
	return reflect.DeepEqual(u, v), true
}

// TestJSONSameAsEncoding: wherever jsonSame answers, it answers as an
// encode and decode of both values would; where that round trip would
// change a value, it leaves the answer to the encoding.
func TestJSONSameAsEncoding(t *testing.T) {
	values := []any{
		nil, []any(nil), map[string]any(nil), []any{}, map[string]any{},
		true, false, "", "a", "\xff", "a\u2028<>&",
		int64(0), 0, int32(0), 0.0, math.Copysign(0, -1), int64(2), 2.0, 2.5, int64(1) << 53, int64(1)<<53 + 1, float64(1 << 53), math.MaxInt64, 1e21,
		math.NaN(), math.Inf(1), json.Number("2.0"), float32(0.1), uint(3),
		[]any{int64(1), "x"}, []any{1.0, "x"}, []any{int64(1)}, []any{nil}, []any{json.Number("1")},
		map[string]any{"a": int64(1)}, map[string]any{"a": 1.0}, map[string]any{"a": nil}, map[string]any{"b": int64(1)},
		map[string]any{"a": int64(1), "b": []any{}}, map[string]any{"\xff": "x"}, map[string]any{"a": json.Number("1")},
		map[string]any{"c": []any{map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(3)}}},
		map[string]any{"c": []any{map[string]any{"type": "Ready", "status": "True", "observedGeneration": 3.0}}},
		map[string]any{"c": []any{map[string]any{"type": "Ready", "status": "False", "observedGeneration": int64(3)}}},
	}
	answered := 0
	for _, a := range values {
		for _, b := range values {
			same, known := jsonSame(a, b)
			if !known {
				continue
			}
			answered++
			want, ok := viaJSON(a, b)
			if !ok {
				t.Errorf("jsonSame(%#v, %#v) answered %v where encoding fails", a, b, same)
				continue
			}
			if same != want {
				t.Errorf("jsonSame(%#v, %#v) = %v, by encoding %v", a, b, same, want)
			}
		}
	}
	if answered < len(values)*len(values)/2 {
		t.Errorf("jsonSame answered %d of %d pairs: it should know most values", answered, len(values)*len(values))
	}
	for _, a := range []any{"\xff", math.NaN(), json.Number("2.0"), float32(0.1), map[string]any{"a": json.Number("1")}, []any{int64(1), uint(2)}} {
		if _, known := jsonSame(a, a); known {
			t.Errorf("jsonSame(%#v, itself) answered: the round trip would change it", a)
		}
		if _, known := jsonSame(map[string]any{"x": a}, map[string]any{"y": "other"}); known {
			t.Errorf("jsonSame answered on objects that differ in their keys, one holding %#v", a)
		}
	}
}

// BenchmarkSameStatus compares a RedisCluster's converged status with
// itself as read back: the check of every reconcile that writes nothing.
func BenchmarkSameStatus(b *testing.B) {
	cond := func(typ, status, reason string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": "every child is ready",
			"observedGeneration": int64(1), "lastTransitionTime": "2026-12-06T10:00:00Z"}
	}
	st := map[string]any{
		"readyReplicas": int64(3), "phase": "Running", "selector": "app=redis,cluster=r1",
		"observedGeneration": int64(1), "revision": "d4aa74a5df",
		"conditions": []any{cond("Ready", "True", "Ready"), cond("Reconciling", "False", "Converged"), cond("Stalled", "False", "Converged")},
	}
	old := map[string]any{}
	for k, v := range st {
		old[k] = v
	}
	old["inputsDigest"] = "0123456789abcdef"
	for b.Loop() {
		if !sameStatus(old, st, map[string]bool{"Ready": true, "Reconciling": true, "Stalled": true}) {
			b.Fatal("not the same status")
		}
	}
}

// TestJSONSameDeepOrCyclic: a value nested past what a status holds, or a
// cycle, is left to the encoding, which refuses both.
func TestJSONSameDeepOrCyclic(t *testing.T) {
	nest := func(x any, n int) any {
		for range n {
			x = []any{x}
		}
		return x
	}
	if _, known := jsonSame(nest(math.Copysign(0, -1), 10001), nest(0.0, 10001)); known {
		t.Error("jsonSame answered on values nested 10001 deep, which a decode refuses")
	}
	if same, known := jsonSame(nest("x", 50), nest("x", 50)); !known || !same {
		t.Errorf("jsonSame(50 deep, itself) = %v, %v: want true, known", same, known)
	}
	m := map[string]any{}
	m["self"] = m
	if _, known := jsonSame(m, m); known {
		t.Error("jsonSame answered on a cycle")
	}
	if _, known := jsonSame(map[string]any{"a": m}, map[string]any{}); known {
		t.Error("jsonSame answered on a cycle under a key the other value lacks")
	}
	if sameStatus(map[string]any{"a": m}, map[string]any{"a": m}, nil) {
		t.Error("sameStatus: a cycle is no status the API server stores")
	}
}
