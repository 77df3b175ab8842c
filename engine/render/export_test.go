package render

import (
	"reflect"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/wellknown"
)

// decodeObject is what exportObject replaces: Decode, then normalize.
func decodeObject(t *testing.T, v cue.Value) map[string]any {
	t.Helper()
	var m map[string]any
	if err := v.Decode(&m); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return normalize(m).(map[string]any)
}

// TestExportObjectMatchesDecode checks the fast export against Decode, value
// types included (int64 and float64 as in unstructured objects), and that
// every value Decode would turn into something else is left to Decode.
func TestExportObjectMatchesDecode(t *testing.T) {
	v := cuecontext.New().CompileString(`
import "strconv"
same: {
	s: "x", i: 3, neg: -7, big: 9223372036854775807, f: 2.5, fi: 3.0, q: 6 / 2
	pf: strconv.ParseFloat("3", 64), e: 1e3, t: true, n: null
	empty: {}, list: [], nested: [1, [2, {a: "b"}], {c: [null]}]
	def: *"d" | "e", defs: *{a: 1} | {a: 2}
	_hidden: 1, #Def: int, opt?: 1
}
bytes: {b: 'x'}
hugeInt: {i: 100000000000000000000000}
hugeFloat: {f: 1e400}
incomplete: {s: string}
notStruct: 5
`)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	same := v.LookupPath(cue.ParsePath("same"))
	got, ok := exportObject(same)
	if !ok {
		t.Fatal("exportObject refused a plain object")
	}
	if want := decodeObject(t, same); !reflect.DeepEqual(got, want) {
		t.Errorf("exportObject = %#v\nDecode       = %#v", got, want)
	}
	for _, path := range []string{"bytes", "hugeInt", "hugeFloat", "incomplete", "notStruct"} {
		if _, ok := exportObject(v.LookupPath(cue.ParsePath(path))); ok {
			t.Errorf("%s: exportObject accepted a value Decode turns into something else", path)
		}
	}
}

// TestAddEngineFieldsMatchesSlowPath checks the fast path of setEngineFields
// against the unstructured getters and setters it replaces.
func TestAddEngineFieldsMatchesSlowPath(t *testing.T) {
	parents := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "a.example.com/v1", "kind": "A",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u-1"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "B",
			"metadata": map[string]any{"name": "p", "namespace": "ns"}}},
	}
	metadata := []func() map[string]any{
		func() map[string]any { return map[string]any{"name": "x"} },
		func() map[string]any { return map[string]any{"name": "x", "labels": map[string]any{}} },
		func() map[string]any {
			return map[string]any{"name": "x", "labels": map[string]any{"a": "b", wellknown.LabelID: "other"}}
		},
	}
	for pi, parent := range parents {
		for mi, md := range metadata {
			fast := &unstructured.Unstructured{Object: map[string]any{"metadata": md()}}
			slow := &unstructured.Unstructured{Object: map[string]any{"metadata": md()}}
			if _, ok := plainMetadata(fast); !ok {
				t.Fatalf("metadata %d: not taken by the fast path", mi)
			}
			setEngineFields("id", fast, parent)
			slow.SetNamespace(parent.GetNamespace())
			setEngineFieldsSlow("id", slow, parent)
			if !reflect.DeepEqual(fast.Object, slow.Object) {
				t.Errorf("parent %d, metadata %d:\nfast %#v\nslow %#v", pi, mi, fast.Object, slow.Object)
			}
		}
	}
	for _, md := range []map[string]any{
		{"name": "x", "labels": map[string]any{"a": int64(1)}},
		{"name": "x", "labels": map[string]any{"a": nil}},
		{"name": "x", "labels": "a"},
		{"name": "x", "ownerReferences": []any{}},
	} {
		if _, ok := plainMetadata(&unstructured.Unstructured{Object: map[string]any{"metadata": md}}); ok {
			t.Errorf("%v: the fast path would not normalize it as the setters do", md)
		}
	}
}
