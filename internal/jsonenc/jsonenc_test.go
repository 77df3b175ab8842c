package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/internal/jsonenc"
)

// TestAppendAsMarshal: Append writes json.Marshal's bytes for the values
// an unstructured object holds and for those it leaves to Marshal.
func TestAppendAsMarshal(t *testing.T) {
	for _, x := range []any{
		nil, true, false, "", "plain", `q"uote`, `back\slash`, "<&>", "tab\tnew\nline\x01", "\u2028\u2029", "\xff\xfe", "del\x7f", "é ✓",
		int64(0), int64(-9007199254740993), 1.5, 1e21, 1e-7, float64(3),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil),
		map[string]any{"b": int64(1), "a": []any{"x", nil, map[string]any{"<": "&"}}, "": 2.5},
		map[string]string{"z": "1", "a": "2"}, []string{"a"}, int(7), json.Number("12"),
	} {
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonenc.Append([]byte("prefix"), x)
		if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("Append(%#v) = %s, %v; want prefix%s", x, got, err, want)
		}
	}
}

// FuzzAppend: any JSON document, decoded as unstructured decodes it, is
// written as json.Marshal writes it.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true,{"b":"<\u2028>"}]}`, `"\ud800"`, `[1e400]`, `{"k":-0}`, `{"z":1,"a":{"y":[],"b":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var x any
		if utiljson.Unmarshal(raw, &x) != nil {
			return
		}
		want, werr := json.Marshal(x)
		got, gerr := jsonenc.Append(nil, x)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Append gave %s (%v), Marshal %s (%v)", got, gerr, want, werr)
		}
	})
}

// TestAppendDeepAndCyclic: a value nested deeper than Append recurses is
// written as Marshal writes it, and a map that holds itself is refused as
// Marshal refuses it, not a stack overflow.
func TestAppendDeepAndCyclic(t *testing.T) {
	var deep any = "x"
	for range 5000 {
		deep = []any{map[string]any{"a": deep}}
	}
	want, _ := json.Marshal(deep)
	if got, err := jsonenc.Append(nil, deep); err != nil || !bytes.Equal(got, want) {
		t.Errorf("5000 levels: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	cycle := map[string]any{"kind": "K"}
	cycle["spec"] = cycle
	if _, err := jsonenc.Append(nil, cycle); err == nil {
		t.Error("a map holding itself was encoded")
	}
}

type rawMarshaler struct{ s string }

func (m rawMarshaler) MarshalJSON() ([]byte, error) { return []byte(m.s), nil }

type tagged struct {
	B string `json:"b"`
	A int    `json:"a,omitempty"`
}

// TestAppendMoreValues: every other kind of value Append leaves to
// Marshal, and the values Marshal refuses, refused alike.
func TestAppendMoreValues(t *testing.T) {
	big1, _ := new(big.Int).SetString("100000000000000000000000", 10)
	var nilp *int
	for _, x := range []any{
		math.Copysign(0, -1), 1e20, 1e21, 123456789012345680000.0, 1e-6, 1e-7, 5e-324, math.MaxFloat64, float32(0.1), float32(1e21),
		int64(math.MinInt64), int64(math.MaxInt64), uint64(math.MaxUint64), int32(-5), int(-1), uint8(3),
		big1, json.Number("2.0"), json.Number("-0"), json.Number("1e3"),
		json.RawMessage(` { "<" : [ 1 ,  2 ] } `), rawMarshaler{`{"a" : "<&>"}`},
		[]byte("<bytes>"), []byte(nil), nilp, tagged{B: "<"},
		map[string]any{"raw": json.RawMessage(` {"z":1, "a":"\u2028"} `), "m": rawMarshaler{` "x" `}},
		map[string]any{"\u2028k": 1.0, "<k>": int64(1), "\xffk": nil, "k\x00": "v", "\x7f": "del"},
		map[string]any{"n": map[string]any(nil), "l": []any(nil), "s": []string(nil), "ms": map[string]string(nil), "e": []any{map[string]any{}, []any{}}},
		map[string]any{"ptr": &tagged{B: "x"}, "iface": any(map[string]any{"x": []any{int64(1)}})},
		[]any{uint(1), float32(2.5), "\xed\xa0\x80"},
		map[string]any{"a": unstructured.Unstructured{Object: map[string]any{"kind": "K"}}},
	} {
		want, werr := json.Marshal(x)
		got, gerr := jsonenc.Append(nil, x)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Errorf("Append(%#v) = %s (%v); Marshal %s (%v)", x, got, gerr, want, werr)
		}
	}
	for _, bad := range []any{math.NaN(), map[string]any{"f": math.Inf(1)}, []any{func() {}}, map[string]any{"c": make(chan int)}, rawMarshaler{"{"}} {
		_, werr := json.Marshal(bad)
		_, gerr := jsonenc.Append(nil, bad)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%#v: Append error %v, Marshal error %v", bad, gerr, werr)
		}
	}
}
