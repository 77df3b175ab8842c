package webhook

import (
	"bytes"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzEnvelope: decodeReview reads a review as encoding/json decodes it
// into apiextensions/v1's type (the objects' bytes the same), refuses what
// it refuses but for an object's own text (decodeSlim checks that), and
// the answer appendReview writes is the bytes encoding/json writes.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u-1","desiredAPIVersion":"a/v2","objects":[{"kind":"K"},{"apiVersion":"a/v1"}]}}`,
		`{"request":{"uid":"u","desiredAPIVersion":"a/v2","objects":[]}}`,
		`{"request":{"uid":"u","objects":null,"x":[1,{"y":tru}]}}`,
		`{"request":null}`,
		`{"Request":{"UID":"a","uid":"b","DESIREDapiversion":"a/v\u0032"},"KIND":"<&>"}`,
		`{"request":{"objects":{}}}`,
		`{"request":{"uid":5}}`,
		`{"request":[]}`,
		`{"request":{"objects":[1,"x",null,[]]}}`,
		`{"request":{"objects":[{"a":1}  ,  {"b":[2]}]}}  `,
		`{"request":{"objects":[{"a":1},]}}`,
		`{"request":{"objects":[{"a":1}}}`,
		`{"request":{"uid":"\u2028\ud800x"}}`,
		`{"apiVersion":null,"request":{}} x`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := &apiextensionsv1.ConversionReview{}
		jerr := json.Unmarshal(body, want)
		rr, err := decodeReview(body)
		if jerr == nil && err != nil {
			t.Fatalf("decodeReview refused what encoding/json decodes (%v): %s", err, body)
		}
		if err != nil {
			return
		}
		if jerr != nil {
			// Only an object's own text may be wrong here: its bytes are
			// delimited, not checked, until decodeSlim reads them.
			for _, o := range rr.objects {
				if !json.Valid(o) {
					return
				}
			}
			t.Fatalf("encoding/json refuses (%v), decodeReview took it: %s", jerr, body)
		}
		if rr.apiVersion != want.APIVersion || rr.kind != want.Kind || rr.hasRequest != (want.Request != nil) {
			t.Fatalf("envelope %+v, want %+v: %s", rr, want, body)
		}
		if want.Request == nil {
			return
		}
		if rr.uid != string(want.Request.UID) || rr.desired != want.Request.DesiredAPIVersion || len(rr.objects) != len(want.Request.Objects) {
			t.Fatalf("request %+v, want %+v: %s", rr, want.Request, body)
		}
		for i, o := range rr.objects {
			if w := want.Request.Objects[i].Raw; !bytes.Equal(o, w) && !(w == nil && string(o) == "null") {
				t.Fatalf("object %d: %s, want %s", i, o, w)
			}
		}
		// The answer, as the handler wrote it with encoding/json.
		var conv [][]byte
		resp := &apiextensionsv1.ConversionReview{TypeMeta: want.TypeMeta, Response: &apiextensionsv1.ConversionResponse{
			UID: want.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}, ConvertedObjects: []runtime.RawExtension{},
		}}
		for _, o := range rr.objects {
			if json.Valid(o) && !bytes.Equal(o, []byte("null")) {
				var c bytes.Buffer
				_ = json.Compact(&c, o)
				conv = append(conv, c.Bytes())
				resp.Response.ConvertedObjects = append(resp.Response.ConvertedObjects, runtime.RawExtension{Raw: c.Bytes()})
			}
		}
		if conv == nil {
			conv = [][]byte{}
		}
		var wantOut bytes.Buffer
		if err := json.NewEncoder(&wantOut).Encode(resp); err != nil {
			t.Fatal(err)
		}
		if got := appendReview(nil, rr, conv); !bytes.Equal(got, wantOut.Bytes()) {
			t.Fatalf("answer:\n%s\nwant:\n%s", got, wantOut.Bytes())
		}
	})
}
