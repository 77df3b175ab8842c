package worker

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"
)

// TestFrameDecodesAsMarshal: a framed request, its objects encoded apart
// from the rest, decodes to what json.Marshal's encoding of it decodes to,
// with its length in front; empty objects are left out as omitempty says.
func TestFrameDecodesAsMarshal(t *testing.T) {
	for name, req := range map[string]*request{
		"render": {Op: opRender, Root: "/t", Kind: "redis", Revision: "r1",
			Parent: map[string]any{"apiVersion": "x/v1", "metadata": map[string]any{"name": "a<&>\u2028é"},
				"spec": map[string]any{"n": int64(3), "f": 1.5, "l": []any{true, nil, "s"}}},
			Observed:   map[string]map[string]any{"pod-1": {"status": map[string]any{"phase": "Running"}}, "pod-0": {}, "gone": nil},
			Referenced: map[string]wireReferenced{"cfg": {Objects: []map[string]any{{"data": map[string]any{"k": "v"}}}, List: true}},
			Files:      map[string][]byte{"k.cue": []byte("package k")}},
		"convert": {Op: "convert", Object: map[string]any{"spec": map[string]any{"x": "y"}}, ToVersion: "v2"},
		"bare":    {Op: "check"},
	} {
		t.Run(name, func(t *testing.T) {
			msg, err := frame(req)
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.BigEndian.Uint32(msg); int(n) != len(msg)-4 {
				t.Fatalf("length %d, body %d bytes", n, len(msg)-4)
			}
			var got, want request
			if err := json.Unmarshal(msg[4:], &got); err != nil {
				t.Fatalf("%v: %s", err, msg[4:])
			}
			ref, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ref, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("framed:\n%s\nmarshalled:\n%s", msg[4:], ref)
			}
		})
	}
}
