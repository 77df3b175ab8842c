package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
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
		`{"request":{"uid":"u","objects":[{}]},"response":5}`,
		`{"request":{"uid":"u"},"Response":{"result":{"code":"x"}}}`,
		`{"request":{"uid":"u"},"response":{"convertedObjects":[{}],"uid":"v"}}`,
		`{"request":{"uid":"u1","desiredAPIVersion":"a/v2","objects":[{}]},"request":{}}`,
		`{"request":{"uid":"u1"},"Request":{"desiredAPIVersion":"a/v2","objects":[]},"request":null,"request":{"uid":"u2"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := &apiextensionsv1.ConversionReview{}
		jerr := json.Unmarshal(body, want)
		rr, err := decodeReview(body, 1<<30)
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
		if rr.uid != string(want.Request.UID) || rr.desired != want.Request.DesiredAPIVersion || len(rr.objects) != len(want.Request.Objects) || rr.count != len(rr.objects) {
			t.Fatalf("request %+v, want %+v: %s", rr, want.Request, body)
		}
		for i, o := range rr.objects {
			// A later array's null is null here, where encoding/json keeps
			// the earlier array's element (decodeReview's doc).
			if w := want.Request.Objects[i].Raw; !bytes.Equal(o, w) && string(o) != "null" {
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

// TestEnvelopeCountsPastTheLimit: past the limit of objects a review's
// objects are counted, not kept, and the handler refuses it by its count.
func TestEnvelopeCountsPastTheLimit(t *testing.T) {
	body := []byte(`{"request":{"uid":"u","desiredAPIVersion":"a/v2","objects":[` + strings.Repeat(`{},`, 9) + `{}]}}`)
	rr, err := decodeReview(body, 3)
	if err != nil || rr.count != 10 || len(rr.objects) != 4 {
		t.Fatalf("count %d, kept %d, error %v; want 10, 4, nil", rr.count, len(rr.objects), err)
	}
	h := &Handler{Registry: &Registry{}, Limits: Limits{MaxObjects: 3}}
	if _, err := h.review(context.Background(), rr); err == nil || !strings.Contains(err.Error(), "review of 10 objects over the webhook's limit of 3") {
		t.Errorf("review: %v", err)
	}
}
