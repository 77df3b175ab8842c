package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzSlim: an object decoded but for its managedFields and encoded again
// with them is the object unstructured decodes, and what decodeSlim gives
// is that object without them; what unstructured refuses, decodeSlim
// refuses.
func FuzzSlim(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]},"spec":{"x":1}}`,
		`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","generation":9007199254740993,"annotations":{"a":"<&>"}},"status":{"r":0.5,"l":[1,"x",null]}}`,
		`{"apiVersion":"a/v1","kind":"K","metadata":"x"}`,
		`{"apiVersion":"a/v1","kind":"K","metadata":null,"spec":null}`,
		`{"apiVersion":"a/v1","kind":"K","metadata":{"managedFields":null}}`,
		`{"apiVersion":"a/v1"}`,
		`{"kind":1}`,
		`null`,
		`[]`,
		`{"kind":"K","kind":"L"}`,
		`{"kind":"K","metadata":{"managedFields":[}]}}`,
		`{"kind":"K","metadata":{"managedFields":[1],"name":"a"},"metadata":{"name":"b"}}`,
		`{"kind":"K","a\u0041":"x\"}"} `,
		`{"kind":"K"} x`,
		`{"kind":"K","n":1 2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		full := &unstructured.Unstructured{}
		ferr := full.UnmarshalJSON(raw)
		slim, managed, serr := decodeSlim(raw)
		if ferr == nil && serr != nil {
			t.Fatalf("decodeSlim refused what unstructured decodes (%v): %s", serr, raw)
		}
		if serr != nil {
			return
		}
		b, err := encodeSlim(slim, managed)
		if ferr != nil {
			// managedFields are checked once encoded again.
			if err == nil {
				t.Fatalf("unstructured refuses (%v), decodeSlim and encodeSlim took it: %s", ferr, raw)
			}
			return
		}
		if err != nil {
			t.Fatalf("encodeSlim: %v", err)
		}
		again := &unstructured.Unstructured{}
		if err := again.UnmarshalJSON(b); err != nil {
			t.Fatalf("encodeSlim's %s: %v", b, err)
		}
		if !equality.Semantic.DeepEqual(again.Object, full.Object) {
			t.Fatalf("encoded again:\n%s\nunstructured decodes:\n%s", b, raw)
		}
		if meta, ok := full.Object["metadata"].(map[string]any); ok {
			delete(meta, "managedFields")
		}
		if !equality.Semantic.DeepEqual(slim.Object, full.Object) {
			t.Fatalf("decodeSlim gave %v, want %v", slim.Object, full.Object)
		}
	})
}
