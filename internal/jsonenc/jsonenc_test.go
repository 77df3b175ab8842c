package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"testing"

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
