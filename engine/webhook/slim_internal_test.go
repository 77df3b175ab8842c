package webhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzSlim: what decodeSlim gives is the object unstructured decodes
// without its metadata.managedFields, and encodeSlim encodes that; what
// unstructured refuses, decodeSlim refuses, unless the metadata that
// counts has managedFields (their bytes are delimited, not decoded: an
// out-of-range number in them passes, and is never sent back).
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
		`{"kind":"K","metadata":{"managedFields":[1e400]}}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":{"name":"b"}}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":"x"}`,
		`{"kind":"K","metadata":{"managedFields":[1],"managedFields":[1e400]}}`,
		`{"kind":"K","spec":[1e400]}`,
		`{"kind":"K","metadata":{"name":1e400}}`,
		`{"kind":"K","a\u0041":"x\"}"} `,
		`{"kind":"K"} x`,
		`{"kind":"K","n":1 2}`,
		`{"kind":"K","a":1.0,"b":[-2.5e3]}`,
		`{"apiVersion":"a/b/v1","kind":"K"}`,
		`{"apiVersion":"a/v1/","kind":"K","metadata":{"managedFields":[]}}`,
		// Found by the fuzzer.
		"{\"kind\":\"0\",\"\xc4\":\"\"}",
		`{"kind":""}`,
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
		if ferr != nil {
			var v any
			if managed == nil || utiljson.Unmarshal(managed, &v) == nil {
				t.Fatalf("unstructured refuses (%v), decodeSlim took it, its managedFields %s decode: %s", ferr, managed, raw)
			}
			return
		}
		if meta, ok := full.Object["metadata"].(map[string]any); ok {
			if _, had := meta["managedFields"]; had != (managed != nil) {
				t.Fatalf("decodeSlim's managedFields %s, unstructured's metadata %v: %s", managed, meta, raw)
			}
			delete(meta, "managedFields")
		}
		if !equality.Semantic.DeepEqual(slim.Object, full.Object) {
			t.Fatalf("decodeSlim gave %v, want %v", slim.Object, full.Object)
		}
		// encodeSlim encodes what json encodes of unstructured's object
		// without managedFields (1.0 is 1 in both: compared as bytes).
		b, err := encodeSlim(slim)
		if err != nil {
			t.Fatalf("encodeSlim: %v", err)
		}
		want, err := json.Marshal(full.Object)
		if err != nil {
			t.Fatalf("json of unstructured's object: %v", err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("encodeSlim gave:\n%s\nwant:\n%s", b, want)
		}
	})
}

// TestSlimDepth: decodeSlim refuses an object nested deeper than
// unstructured decodes, at the top and in metadata, and takes one as deep.
func TestSlimDepth(t *testing.T) {
	nest := func(prefix string, depth int) []byte {
		// prefix opens depth-1 levels already counted in depth.
		return []byte(prefix + strings.Repeat("[", depth) + strings.Repeat("]", depth) + strings.Repeat("}", strings.Count(prefix, "{")))
	}
	for _, c := range []struct {
		prefix string
		levels int // the object's own and its metadata's, opened by prefix
	}{{`{"kind":"K","spec":`, 1}, {`{"kind":"K","metadata":{"x":`, 2}, {`{"kind":"K","metadata":{"managedFields":`, 2}} {
		for _, depth := range []int{maxDepth - c.levels, maxDepth - c.levels + 1} {
			raw := nest(c.prefix, depth)
			full := &unstructured.Unstructured{}
			ferr := full.UnmarshalJSON(raw)
			_, _, serr := decodeSlim(raw)
			if (ferr == nil) != (serr == nil) {
				t.Errorf("%s at depth %d: unstructured %v, decodeSlim %v", c.prefix, depth+c.levels, ferr, serr)
			}
		}
	}
}
