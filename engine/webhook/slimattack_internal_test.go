package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// slimContract checks raw against the contract FuzzSlim states, and
// returns what breaks it (nil when nothing does). A panic of decodeSlim
// is returned as an error too.
func slimContract(raw []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decodeSlim panicked: %v", r)
		}
	}()
	full := &unstructured.Unstructured{}
	ferr := full.UnmarshalJSON(raw)
	slim, managed, serr := decodeSlim(raw)
	if ferr == nil && serr != nil {
		return fmt.Errorf("decodeSlim refused what unstructured decodes: %v", serr)
	}
	if serr != nil {
		return nil
	}
	if ferr != nil {
		var v any
		if managed == nil || utiljson.Unmarshal(managed, &v) == nil {
			return fmt.Errorf("unstructured refuses (%v), decodeSlim took it (managedFields %q)", ferr, managed)
		}
		return nil
	}
	if meta, ok := full.Object["metadata"].(map[string]any); ok {
		if _, had := meta["managedFields"]; had != (managed != nil) {
			return fmt.Errorf("managedFields %q, unstructured's metadata %v", managed, meta)
		}
		delete(meta, "managedFields")
	} else if managed != nil {
		return fmt.Errorf("managedFields %q but unstructured's metadata is %T", managed, full.Object["metadata"])
	}
	if !equality.Semantic.DeepEqual(slim.Object, full.Object) {
		return fmt.Errorf("decodeSlim gave %#v, want %#v", slim.Object, full.Object)
	}
	b, err := encodeSlim(slim)
	if err != nil {
		return fmt.Errorf("encodeSlim: %v", err)
	}
	again := &unstructured.Unstructured{}
	if err := again.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("encodeSlim's %s: %v", b, err)
	}
	// A float with an integral value encodes as an integer, and decodes
	// again as int64, however it was encoded: compare with unstructured's
	// own round trip.
	if want := roundTrip(full.Object); !equality.Semantic.DeepEqual(again.Object, want) {
		return fmt.Errorf("encoded again %s, want %#v", b, want)
	}
	if meta, ok := again.Object["metadata"].(map[string]any); ok {
		if _, has := meta["managedFields"]; has {
			return fmt.Errorf("encodeSlim's %s has managedFields", b)
		}
	}
	return nil
}

// TestSlimAttackCases: odd JSON, each against the contract.
func TestSlimAttackCases(t *testing.T) {
	mf := `[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{"f:x":{}}}}]`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []string{
		// escapes in keys
		`{"kind":"K","metadat\u0061":{"name":"n","managedFields":` + mf + `}}`,
		`{"kind":"K","metadata":{"name":"n","managedField\u0073":` + mf + `}}`,
		`{"kin\u0064":"K","metadata":{"managedFields":[1e400]}}`,
		`{"kind":"K","\u006detadata":{"managedFields":[1e400]},"spec":{}}`,
		`{"kind":"K","metadata":{"\u006danagedFields":[1e400]}}`,
		`{"kind":"K","metadata\u0000":{"managedFields":` + mf + `}}`,
		`{"kind":"K","metadata":{"managedFields\u0000":` + mf + `}}`,
		`{"kind":"K","Metadata":{"managedFields":` + mf + `}}`,
		`{"kind":"K","metadata":{"ManagedFields":` + mf + `}}`,
		`{"kind":"K","metadata":{"managedfields":` + mf + `}}`,
		`{"kind":"K","metadata":{"managedFields ":` + mf + `}}`,
		`{"kind":"K","metadata":{"labels":{"a\ud800":"b"},"managedFields":` + mf + `}}`,
		`{"kind":"K","metadata":{"labels":{"a\ud83d\ude00":"\udc00"}}}`,
		`{"kind":"K","metadata":{"labels":{"a\uZZZZ":"b"}}}`,
		`{"kind":"K","metadata":{"la\bels":{}}}`,
		`{"kind":"K","\x":1}`,
		`{"kind":"K","a\/b":1}`,
		// invalid UTF-8 in keys and values
		"{\"kind\":\"K\",\"metadata\xff\":{\"managedFields\":[1e400]}}",
		"{\"kind\":\"K\",\"metadata\":{\"managedFields\xff\":[1]}}",
		"{\"kind\":\"K\",\"metadata\":{\"labels\":{\"\xc4\":\"\xed\xa0\x80\"}}}",
		"{\"kind\":\"K\xff\"}",
		"{\"kind\":\"K\",\"\xc4\":\"\",\"\xc5\":\"\"}",
		"{\"kind\":\"K\",\"\xef\xbf\xbd\":1,\"\xff\":2}", // both keys are U+FFFD
		// duplicates
		`{"kind":"K","metadata":{"managedFields":` + mf + `,"name":"a"},"metadata":{"name":"b","managedFields":[2]}}`,
		`{"kind":"K","metadata":{"labels":{"a":"1"},"labels":{"b":"2"}}}`,
		`{"kind":"K","metadata":{"managedFields":[1],"managedFields":null}}`,
		`{"kind":"K","metadata":{"managedFields":[1e400],"managedFields":null}}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":null}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":{}}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":[]}`,
		`{"kind":"K","metadata":{"managedFields":[1e400]},"metadata":1e400}`,
		`{"kind":"K","metadata":{"managedFields":[1]},"kind":""}`,
		`{"kind":"","metadata":{"managedFields":[1e400]},"kind":"K"}`,
		`{"kind":"K","kind":1}`,
		// BOM, whitespace
		"\xef\xbb\xbf{\"kind\":\"K\"}",
		"{\"kind\":\"K\"}\xef\xbb\xbf",
		" \t\r\n{ \t\r\n\"kind\" \t\r\n: \t\r\n\"K\" \t\r\n, \"metadata\" : { \"managedFields\" : [ ] , \"name\" : \"n\" } \t\r\n} \t\r\n",
		"{\"kind\":\"K\"}\f",
		"{\"kind\":\"K\"}\v",
		"{\"kind\":\"K\"}\x00",
		"{\"kind\":\"K\",\"a\":1\xa0}",
		"{\"kind\":\"K\"\xc2\xa0}",
		// literals and numbers
		`{"kind":"K","a":true,"b":false,"c":null,"d":-0,"e":0.0,"f":1E2,"g":1e-400,"h":9223372036854775807,"i":9223372036854775808,"j":-9223372036854775809,"k":1.5e300}`,
		`{"kind":"K","a":01}`,
		`{"kind":"K","a":+1}`,
		`{"kind":"K","a":.5}`,
		`{"kind":"K","a":1.}`,
		`{"kind":"K","a":1e}`,
		`{"kind":"K","a":-}`,
		`{"kind":"K","a":NaN}`,
		`{"kind":"K","a":Infinity}`,
		`{"kind":"K","a":tru}`,
		`{"kind":"K","a":truex}`,
		`{"kind":"K","a":nul}`,
		`{"kind":"K","a":1"b":2}`,
		`{"kind":"K","a":1:2}`,
		`{"kind":"K","a":true{}}`,
		`{"kind":"K","a":"x""y"}`,
		`{"kind":"K","metadata":{"managedFields":1e400}}`,
		`{"kind":"K","metadata":{"managedFields":tru}}`,
		`{"kind":"K","metadata":{"managedFields":"\x"}}`,
		`{"kind":"K","metadata":{"managedFields":"\u12"}}`,
		`{"kind":"K","metadata":{"managedFields":{]}}`,
		`{"kind":"K","metadata":{"managedFields":[}}}`,
		`{"kind":"K","metadata":{"managedFields":[1 2]}}`,
		`{"kind":"K","metadata":{"managedFields":{"a"}}}`,
		`{"kind":"K","metadata":{"managedFields":["a"}, "name":"x"}}`,
		`{"kind":"K","metadata":{"managedFields":["}"]}}`,
		`{"kind":"K","metadata":{"managedFields":["\"]"]}}`,
		`{"kind":"K","metadata":{"managedFields":["\\"]}}`,
		`{"kind":"K","metadata":{"managedFields":["\\\"]"]}}`,
		`{"kind":"K","metadata":{"managedFields":[]]}}`,
		`{"kind":"K","metadata":{"managedFields":[]}}}`,
		`{"kind":"K","metadata":{"managedFields":[],}}`,
		`{"kind":"K","metadata":{"managedFields":[]},}`,
		`{"kind":"K","metadata":{,"managedFields":[]}}`,
		`{"kind":"K","metadata":{"managedFields":[]}`,
		`{"kind":"K","metadata":{"managedFields":[]`,
		`{"kind":"K","metadata":{"managedFields":`,
		`{"kind":"K","metadata":{"managedFields"`,
		`{"kind":"K","metadata":{"managedFields":[]}}` + "\x00",
		"{\"kind\":\"K\",\"metadata\":{\"managedFields\":[\"\x01\"]}}",
		"{\"kind\":\"K\",\"metadata\":{\"managedFields\":[\"\xff\"]}}",
		// structure
		`{}`, `{"kind":"K"`, `{"kind":"K",}`, `{"kind":"K"}}`, `{"kind":"K"}{}`, `{"kind" "K"}`, `{kind:"K"}`,
		`{'kind':'K'}`, `{"kind":"K","a"}`, `{"kind":"K","a":}`, `{"kind":"K",,"a":1}`, `"x"`, `1`, ``, ` `, `{`, `}`,
		`{"kind":"K","metadata":{}}`, `{"kind":"K","metadata":{ }}`, `{"kind":"K","metadata":{"":1}}`,
		`{"kind":"K","metadata":"{\"managedFields\":1}"}`,
		`{"kind":"K","spec":{"metadata":{"managedFields":[1]}}}`,
		`{"kind":"K","metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:metadata":{"f:labels":{}}}}],"labels":{"l":"v"},"annotations":{"a":"<\u2028>"}}}`,
		// depth (the object at depth 1, metadata at 2)
		`{"kind":"K","metadata":{"labels":` + deep(9998) + `}}`,
		`{"kind":"K","metadata":{"labels":` + deep(9999) + `}}`,
		`{"kind":"K","metadata":{"managedFields":` + deep(9998) + `},"metadata":{}}`,
		`{"kind":"K","metadata":{"managedFields":` + deep(9999) + `},"metadata":{}}`,
		`{"kind":"K","metadata":{"managedFields":` + deep(9999) + `}}`,
		`{"kind":"K","metadata":` + deep(9999) + `}`,
		`{"kind":"K","metadata":` + deep(10000) + `}`,
		`{"kind":"K","metadata":{"a":` + strings.Repeat(`{"a":`, 9997) + `1` + strings.Repeat(`}`, 9997) + `}}`,
		`{"kind":"K","metadata":{"a":` + strings.Repeat(`{"a":`, 9998) + `1` + strings.Repeat(`}`, 9998) + `}}`,
		`{"kind":"K","spec":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9998) + `}`,
		`{"kind":"K","spec":"` + strings.Repeat("[", 20000) + `"}`,
		`{"kind":"K","metadata":{"managedFields":"` + strings.Repeat("{", 20000) + `"}}`,
		`{"kind":"K","metadata":{"managedFields":[` + strings.Repeat(`"\[",`, 20000) + `1]}}`,
	}
	for i, c := range cases {
		if err := slimContract([]byte(c)); err != nil {
			show := c
			if len(show) > 200 {
				show = show[:200] + "..."
			}
			t.Errorf("case %d %q: %v", i, show, err)
		}
	}
}

// TestSlimAttackMutations: every prefix of some objects, and every one of
// them with one byte replaced or inserted, against the contract (catches
// panics and delimiting slips).
func TestSlimAttackMutations(t *testing.T) {
	seeds := []string{
		`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","labels":{"a":"b"},"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:x":{}}},"t":"a\"b\\"}]},"spec":{"x":[1,-2.5e3,true,null,"s"]}}`,
		`{"kind":"K","metadat\u0061":{"managedFields":[1],"name":"\u00e9"},"metadata":{"managedFields":{"a":[]}}}`,
	}
	bytesToTry := []byte{'"', '\\', '{', '}', '[', ']', ',', ':', ' ', 'x', 'e', '0', '-', 0xff, 0x00, 0x1f, 'u', '/'}
	n, bad := 0, 0
	for _, s := range seeds {
		for i := 0; i <= len(s); i++ {
			try := func(raw []byte) {
				n++
				if err := slimContract(raw); err != nil {
					bad++
					if bad <= 20 {
						t.Errorf("%q: %v", raw, err)
					}
				}
			}
			try([]byte(s[:i]))
			for _, b := range bytesToTry {
				if i < len(s) {
					m := []byte(s)
					m[i] = b
					try(m)
				}
				m := []byte(s[:i] + string([]byte{b}) + s[i:])
				try(m)
			}
			if i < len(s) {
				try([]byte(s[:i] + s[i+1:]))
			}
		}
	}
	t.Logf("%d inputs, %d break the contract", n, bad)
}

// TestSlimAttackTime: decodeSlim's time on big hostile objects, against
// unstructured's on the same bytes, at 1 and 8 MiB (linear: 8 MiB costs
// about 8 times 1 MiB).
func TestSlimAttackTime(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	shapes := map[string]func(n int) []byte{
		"many members": func(n int) []byte {
			var b bytes.Buffer
			b.WriteString(`{"kind":"K"`)
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, `,"k%d":0`, i)
			}
			b.WriteString("}")
			return b.Bytes()
		},
		"one key repeated": func(n int) []byte {
			return []byte(`{"kind":"K"` + strings.Repeat(`,"a":0`, n/6) + `}`)
		},
		"metadata members": func(n int) []byte {
			var b bytes.Buffer
			b.WriteString(`{"kind":"K","metadata":{"a":0`)
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, `,"k%d":0`, i)
			}
			b.WriteString("}}")
			return b.Bytes()
		},
		"escaped keys": func(n int) []byte {
			var b bytes.Buffer
			b.WriteString(`{"kind":"K"`)
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, `,"\u006b%d":0`, i)
			}
			b.WriteString("}")
			return b.Bytes()
		},
		"repeated metadata with managedFields": func(n int) []byte {
			return []byte(`{"kind":"K"` + strings.Repeat(`,"metadata":{"managedFields":[0]}`, n/32) + `}`)
		},
		"repeated managedFields": func(n int) []byte {
			return []byte(`{"kind":"K","metadata":{"a":0` + strings.Repeat(`,"managedFields":[0]`, n/20) + `}}`)
		},
		"deep arrays in metadata": func(n int) []byte {
			var b bytes.Buffer
			b.WriteString(`{"kind":"K","metadata":{"a":0`)
			for b.Len() < n {
				b.WriteString(`,"x":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990))
			}
			b.WriteString("}}")
			return b.Bytes()
		},
		"long string": func(n int) []byte {
			return []byte(`{"kind":"K","metadata":{"managedFields":"` + strings.Repeat(`\"`, n/2) + `"}}`)
		},
		"invalid utf-8 keys": func(n int) []byte {
			var b bytes.Buffer
			b.WriteString(`{"kind":"K"`)
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, ",\"\xff%d\":0", i)
			}
			b.WriteString("}")
			return b.Bytes()
		},
	}
	measure := func(f func()) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			f()
			if d := time.Since(start); d < best {
				best = d
			}
		}
		return best
	}
	for name, shape := range shapes {
		small, big := shape(1<<20), shape(8<<20)
		var ds, db, us time.Duration
		ds = measure(func() { _, _, _ = decodeSlim(small) })
		db = measure(func() { _, _, _ = decodeSlim(big) })
		us = measure(func() { u := &unstructured.Unstructured{}; _ = u.UnmarshalJSON(big) })
		_, _, serr := decodeSlim(big)
		uerr := (&unstructured.Unstructured{}).UnmarshalJSON(big)
		t.Logf("%-40s 1MiB %8v  8MiB %8v (x%.1f)  unstructured 8MiB %8v (slim/unstructured %.2f)  errs slim=%v unstructured=%v",
			name, ds, db, float64(db)/float64(ds), us, float64(db)/float64(us), serr != nil, uerr != nil)
		if float64(db)/float64(ds) > 20 {
			t.Errorf("%s: 8 MiB takes %v, 1 MiB %v: superlinear", name, db, ds)
		}
	}
}

// TestSlimAttackThroughHandler: reviews as a client of the port sends
// them, converted and answered; the answer is then put through the API
// server's restoreObjectMeta (copied below) with the original object, and
// compared with the original converted without the slimming.
func TestSlimAttackThroughHandler(t *testing.T) {
	gk := schema.GroupKind{Group: "conv.example.com", Kind: "Gauge"}
	r := &Registry{}
	r.Set(gk, Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"})
	h := &Handler{Registry: r}
	mf := `[{"manager":"m","operation":"Update","apiVersion":"conv.example.com/v1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]`
	for _, obj := range []string{
		`{"apiVersion":"conv.example.com/v1","kind":"Gauge","metadata":{"name":"a","namespace":"ns","uid":"u","labels":{"l":"v"},"annotations":{"a":"<&>"},"managedFields":` + mf + `},"spec":{"replicas":3}}`,
		`{"apiVersion":"conv.example.com/v1","kind":"Gauge","metadat\u0061":{"name":"a","managedField\u0073":` + mf + `,"labels":{"l":"v"}},"spec":{"replicas":3}}`,
		`{"apiVersion":"conv.example.com/v1","kind":"Gauge","metadata":{"name":"a","managedFields":` + mf + `},"metadata":{"name":"b","labels":{"l":"w"}},"spec":{"replicas":3}}`,
		"{\"apiVersion\":\"conv.example.com/v1\",\"kind\":\"Gauge\",\"metadata\":{\"name\":\"a\xff\",\"labels\":{\"l\":\"v\"},\"managedFields\":" + mf + "},\"spec\":{\"replicas\":3,\"\xc4\":\"\xed\xa0\x80\"}}",
		`{"apiVersion":"conv.example.com/v1","kind":"Gauge","metadata":{"name":"a","managedFields":[1e400]},"spec":{"replicas":3}}`,
		`{"apiVersion":"conv.example.com/v1","kind":"Gauge","metadata":{"name":"a","managedFields":[1]},"spec":{"replicas":9223372036854775807,"f":1.0,"g":-0,"h":1e308,"i":18446744073709551616}}`,
	} {
		body, err := json.Marshal(&apiextensionsv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request: &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: "conv.example.com/v2",
				Objects: []runtime.RawExtension{{Raw: []byte(obj)}}}})
		if err != nil {
			t.Logf("%q: the review does not encode (%v): not something a client can send as is", obj, err)
			continue
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)).WithContext(context.Background()))
		out := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
			t.Errorf("%q: answer %d %s", obj, rec.Code, rec.Body)
			continue
		}
		if out.Response.Result.Status != metav1.StatusSuccess {
			t.Logf("%q: refused: %s", obj, out.Response.Result.Message)
			continue
		}
		// What the webhook would have answered converting the whole object.
		orig := &unstructured.Unstructured{}
		if err := orig.UnmarshalJSON([]byte(obj)); err != nil {
			t.Logf("%q: converted, though unstructured refuses it (%v)", obj, err)
			continue
		}
		want, err := Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"}.Convert(orig.DeepCopy(), "v2")
		if err != nil {
			t.Fatal(err)
		}
		want.SetAPIVersion("conv.example.com/v2")
		got := &unstructured.Unstructured{}
		if err := got.UnmarshalJSON(out.Response.ConvertedObjects[0].Raw); err != nil {
			t.Errorf("%q: answer %s: %v", obj, out.Response.ConvertedObjects[0].Raw, err)
			continue
		}
		if bytes.Contains(out.Response.ConvertedObjects[0].Raw, []byte("managedFields")) {
			t.Errorf("%q: answer has managedFields: %s", obj, out.Response.ConvertedObjects[0].Raw)
		}
		want.Object = roundTrip(want.Object)
		for _, u := range []*unstructured.Unstructured{got, want} {
			if err := restoreObjectMetaAsAPIServer(orig, u); err != nil {
				t.Errorf("%q: restoreObjectMeta: %v", obj, err)
			}
		}
		if !equality.Semantic.DeepEqual(got.Object, want.Object) {
			t.Errorf("%q: after restoreObjectMeta\n got %v\nwant %v", obj, got.Object, want.Object)
		}
	}
}

// restoreObjectMetaAsAPIServer is the part of apiextensions-apiserver's
// restoreObjectMeta (pkg/apiserver/conversion/webhook_converter.go) that
// picks the fields: metadata from the original, labels and annotations
// from the converted object (validation left out).
func restoreObjectMetaAsAPIServer(original, converted *unstructured.Unstructured) error {
	obj, found := converted.Object["metadata"]
	if !found {
		return fmt.Errorf("missing metadata in converted object")
	}
	responseMetaData, ok := obj.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in converted object", obj)
	}
	if _, ok := original.Object["metadata"]; !ok {
		converted.Object["metadata"] = map[string]any{}
	} else {
		converted.Object["metadata"] = runtime.DeepCopyJSONValue(original.Object["metadata"])
	}
	convertedMetaData, ok := converted.Object["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in input object", converted.Object["metadata"])
	}
	for _, fld := range []string{"labels", "annotations"} {
		obj, found := responseMetaData[fld]
		if !found || obj == nil {
			delete(convertedMetaData, fld)
			continue
		}
		responseField, ok := obj.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", fld, obj)
		}
		convertedMetaData[fld] = responseField
	}
	return nil
}

// roundTrip is m encoded and decoded again as unstructured objects are.
func roundTrip(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		panic(err)
	}
	return u.Object
}

// TestSlimAttackFuzzOracle: FuzzSlim's last check compares encodeSlim's
// output, decoded again, with unstructured's decoding of the input; a
// float with an integral value (1.0, 1e2, -2.5e3) decodes as float64 but
// is encoded "1", "100", "-2500" and decodes again as int64, so FuzzSlim
// fails on inputs decodeSlim handles exactly as unstructured does. This
// runs FuzzSlim's checks, as written there, on such inputs.
func TestSlimAttackFuzzOracle(t *testing.T) {
	for _, s := range []string{`{"kind":"K","a":1.0}`, `{"kind":"K","a":1e2}`, `{"kind":"K","a":[-2.5e3]}`} {
		raw := []byte(s)
		full := &unstructured.Unstructured{}
		if err := full.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		slim, _, err := decodeSlim(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(slim.Object, full.Object) {
			t.Fatalf("%s: decodeSlim gave %v, want %v", s, slim.Object, full.Object)
		}
		b, _ := encodeSlim(slim)
		again := &unstructured.Unstructured{}
		if err := again.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(again.Object, full.Object) {
			t.Errorf("%s: FuzzSlim would fail (\"encoded again\"): %s decodes to a %T, unstructured's of the input to a %T", s, b, again.Object["a"], full.Object["a"])
		}
		// unstructured's own encoding does the same: not decodeSlim's doing.
		ub, _ := full.MarshalJSON()
		uagain := &unstructured.Unstructured{}
		_ = uagain.UnmarshalJSON(ub)
		if equality.Semantic.DeepEqual(uagain.Object, full.Object) {
			t.Errorf("%s: unstructured's own round trip keeps the float", s)
		}
	}
}

// TestSlimAttackBadAPIVersion: unstructured refuses an object whose
// apiVersion does not parse (two slashes: GroupVersionKind is then empty,
// "Object 'Kind' is missing"); decodeSlim checks only kind, and takes it.
func TestSlimAttackBadAPIVersion(t *testing.T) {
	for _, s := range []string{
		`{"apiVersion":"a/b/v1","kind":"K"}`,
		`{"apiVersion":"/v1","kind":"K","metadata":{"name":"n"}}`,
		`{"apiVersion":"a/v1/","kind":"K","spec":{}}`,
	} {
		full := &unstructured.Unstructured{}
		ferr := full.UnmarshalJSON([]byte(s))
		obj, managed, serr := decodeSlim([]byte(s))
		if ferr != nil && serr == nil {
			t.Errorf("%s: unstructured refuses it (%v), decodeSlim takes it (managedFields %q; GroupVersionKind %#v)", s, ferr, managed, obj.GroupVersionKind())
		}
	}
}
