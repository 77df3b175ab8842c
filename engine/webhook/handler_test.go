package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/webhook"
)

var gaugeGK = schema.GroupKind{Group: "conv.example.com", Kind: "Gauge"}

func registry() *webhook.Registry {
	r := &webhook.Registry{}
	r.Set(gaugeGK, webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"})
	return r
}

func gauge(version, name string, spec string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"apiVersion":"conv.example.com/` + version + `","kind":"Gauge",` +
		`"metadata":{"name":"` + name + `","namespace":"ns1"},"spec":` + spec + `,"status":{"observedGeneration":2}}`)}
}

func review(t *testing.T, h http.Handler, req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	t.Helper()
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != req.UID {
		t.Fatalf("response %+v does not answer request %s", out.Response, req.UID)
	}
	return out.Response
}

// TestHandlerConverts converts every object of a review, keeps metadata
// and status, and passes an object already at the desired version as is.
func TestHandlerConverts(t *testing.T) {
	h := &webhook.Handler{Registry: registry()}
	resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: "conv.example.com/v2",
		Objects: []runtime.RawExtension{gauge("v1", "a", `{"replicas":3,"label":"x"}`), gauge("v2", "b", `{"size":4}`)}})
	if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 2 {
		t.Fatalf("result %+v, %d objects", resp.Result, len(resp.ConvertedObjects))
	}
	a := &unstructured.Unstructured{}
	if err := a.UnmarshalJSON(resp.ConvertedObjects[0].Raw); err != nil {
		t.Fatal(err)
	}
	size, _, _ := unstructured.NestedInt64(a.Object, "spec", "size")
	label, _, _ := unstructured.NestedString(a.Object, "spec", "label")
	gen, _, _ := unstructured.NestedInt64(a.Object, "status", "observedGeneration")
	if a.GetAPIVersion() != "conv.example.com/v2" || size != 3 || label != "x" || gen != 2 || a.GetNamespace() != "ns1" || a.GetName() != "a" {
		t.Errorf("converted = %v", a.Object)
	}
	if string(resp.ConvertedObjects[1].Raw) != string(gauge("v2", "b", `{"size":4}`).Raw) {
		t.Errorf("object at the desired version changed: %s", resp.ConvertedObjects[1].Raw)
	}
}

// TestHandlerFailureNamesObject answers a review whose object does not
// convert, or whose kind has no converter, with a Failed result naming the
// object and the reason.
func TestHandlerFailureNamesObject(t *testing.T) {
	h := &webhook.Handler{Registry: registry()}
	for _, tc := range []struct {
		obj  runtime.RawExtension
		want string
	}{
		{gauge("v1", "bad", `{"refuse":true}`), "Gauge ns1/bad: conversion from v1 to v2: spec.refuse: this object refuses to convert"},
		{runtime.RawExtension{Raw: []byte(`{"apiVersion":"conv.example.com/v1","kind":"Dial","metadata":{"name":"d"},"spec":{}}`)},
			"Dial d: conversion to conv.example.com/v2: no converter for kind Dial.conv.example.com"},
	} {
		resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u2", DesiredAPIVersion: "conv.example.com/v2",
			Objects: []runtime.RawExtension{gauge("v1", "ok", `{"replicas":1}`), tc.obj}})
		if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, tc.want) || len(resp.ConvertedObjects) != 0 {
			t.Errorf("result = %+v (%d objects), want Failure with %q", resp.Result, len(resp.ConvertedObjects), tc.want)
		}
	}
}

// TestLocalCertsVerify: the serving certificate of LocalCerts verifies
// against its CA bundle for 127.0.0.1, as the API server checks it.
func TestLocalCertsVerify(t *testing.T) {
	certs, err := webhook.LocalCerts()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(&webhook.Handler{Registry: registry()})
	srv.Listener = tls.NewListener(srv.Listener, &tls.Config{GetCertificate: certs.GetCertificate})
	srv.Start()
	defer srv.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certs.CABundle()) {
		t.Fatal("CA bundle holds no certificate")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(strings.Replace(srv.URL, "http://", "https://", 1) + webhook.Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s = %d, want 405", webhook.Path, resp.StatusCode)
	}
}

// counting is a converter that counts its conversions.
type counting struct {
	webhook.Rename
	n *atomic.Int64
}

func (c counting) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	c.n.Add(1)
	return c.Rename.Convert(obj, to)
}

// TestHandlerStopsWhenTheCallerLeft: a review of 5,000 objects whose
// caller has gone (the API server's timeout, a client that hung up) is not
// converted on: the handler stops at once, its answer naming why, rather
// than spending the operator's CPU on objects nobody reads.
func TestHandlerStopsWhenTheCallerLeft(t *testing.T) {
	n := &atomic.Int64{}
	r := &webhook.Registry{}
	r.Set(gaugeGK, counting{webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"}, n})
	req := &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: "conv.example.com/v2"}
	for i := range webhook.DefaultMaxObjects {
		req.Objects = append(req.Objects, gauge("v1", fmt.Sprintf("g%d", i), `{"replicas":3}`))
	}
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{Request: req})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	(&webhook.Handler{Registry: r}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)).WithContext(ctx))
	if got := n.Load(); got != 0 {
		t.Errorf("%d objects converted for a caller that left, want 0", got)
	}
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil ||
		out.Response.Result.Status != metav1.StatusFailure || !strings.Contains(out.Response.Result.Message, "context canceled") {
		t.Errorf("answer %.300s, want a failure naming the canceled request", rec.Body)
	}
}

// TestHandlerObservesOnlyKnownKinds: Observe is told the kind whose
// converter took a review's objects, and "" for a review none took (no
// object, all at the version asked for, a kind without converter): a
// review's text is anyone's who reaches the port, and would make a metric
// label of any string.
func TestHandlerObservesOnlyKnownKinds(t *testing.T) {
	type seen struct {
		kind, from, to string
		objects        int
		failed         bool
	}
	var got []seen
	h := &webhook.Handler{Registry: registry(), Observe: func(r webhook.Reviewed) {
		got = append(got, seen{r.Kind, r.From, r.To, r.Objects, r.Failed})
	}}
	hostile := "conv.example.com/" + strings.Repeat("x", 1000)
	other := runtime.RawExtension{Raw: []byte(`{"apiVersion":"conv.example.com/v1","kind":"` + strings.Repeat("D", 1000) + `","metadata":{"name":"d"},"spec":{}}`)}
	for _, req := range []*apiextensionsv1.ConversionRequest{
		{UID: "a", DesiredAPIVersion: "conv.example.com/v2", Objects: []runtime.RawExtension{gauge("v1", "a", `{"replicas":3}`)}},
		{UID: "b", DesiredAPIVersion: hostile},
		{UID: "c", DesiredAPIVersion: "conv.example.com/v1", Objects: []runtime.RawExtension{gauge("v1", "c", `{"replicas":3}`)}},
		{UID: "d", DesiredAPIVersion: "conv.example.com/v2", Objects: []runtime.RawExtension{other}},
		{UID: "e", DesiredAPIVersion: "conv.example.com/v2", Objects: []runtime.RawExtension{gauge("v1", "e", `{"refuse":true}`)}},
	} {
		review(t, h, req)
	}
	want := []seen{{"Gauge.conv.example.com", "v1", "v2", 1, false}, {"", "", "", 0, false}, {"", "", "", 1, false}, {"", "", "", 1, true}, {"Gauge.conv.example.com", "", "", 1, true}}
	if !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// doneSpy is a context that tells when someone waits on it (Done).
type doneSpy struct {
	context.Context
	waiting chan struct{}
	once    *sync.Once
}

func (d doneSpy) Done() <-chan struct{} {
	d.once.Do(func() { close(d.waiting) })
	return d.Context.Done()
}

// TestHandlerHoldsUntilFirstLoad: before the templates' first load
// (Loaded open), a review of a kind with no converter is held (at most
// MaxHeld at once), and converted once the load sets one; after the load,
// or when the caller leaves, it is refused at once.
func TestHandlerHoldsUntilFirstLoad(t *testing.T) {
	r := &webhook.Registry{}
	loaded := make(chan struct{})
	h := &webhook.Handler{Registry: r, Loaded: loaded}
	req := &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: "conv.example.com/v2",
		Objects: []runtime.RawExtension{gauge("v1", "a", `{"replicas":3}`)}}
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{Request: req})
	if err != nil {
		t.Fatal(err)
	}
	// held returns once the review waits on its caller, and fails the test
	// if it was answered instead.
	held := func(spy doneSpy, answered chan *apiextensionsv1.ConversionResponse) {
		t.Helper()
		select {
		case <-spy.waiting:
		case resp := <-answered:
			t.Fatalf("answered before the first load, not held: %+v", resp.Result)
		}
	}
	send := func(ctx context.Context) *apiextensionsv1.ConversionResponse {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)).WithContext(ctx))
		out := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
			t.Fatalf("answer %.300s: %v", rec.Body, err)
		}
		return out.Response
	}

	// The caller leaves while its review is held: refused, naming the kind.
	left, cancel := context.WithCancel(context.Background())
	spy := doneSpy{left, make(chan struct{}), &sync.Once{}}
	answered := make(chan *apiextensionsv1.ConversionResponse, 1)
	go func() { answered <- send(spy) }()
	held(spy, answered)
	cancel()
	if resp := <-answered; resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, "no converter for kind Gauge") {
		t.Errorf("held review whose caller left: %+v, want a refusal naming the kind", resp.Result)
	}

	// At most MaxHeld reviews are held at once; the next is answered at once.
	all, cancelAll := context.WithCancel(context.Background())
	many := make(chan *apiextensionsv1.ConversionResponse, webhook.MaxHeld)
	for range webhook.MaxHeld {
		spy := doneSpy{all, make(chan struct{}), &sync.Once{}}
		go func() { many <- send(spy) }()
		held(spy, many)
	}
	spy = doneSpy{context.Background(), make(chan struct{}), &sync.Once{}}
	if resp := send(spy); resp.Result.Status != metav1.StatusFailure {
		t.Errorf("review beyond the %d held: %+v, want a refusal", webhook.MaxHeld, resp.Result)
	}
	select {
	case <-spy.waiting:
		t.Errorf("review beyond the %d held was held too", webhook.MaxHeld)
	default:
	}
	cancelAll()
	for range webhook.MaxHeld {
		<-many
	}

	// Held until the load sets the converter, before the load ends.
	spy = doneSpy{context.Background(), make(chan struct{}), &sync.Once{}}
	go func() { answered <- send(spy) }()
	held(spy, answered)
	r.Set(gaugeGK, webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"})
	if resp := <-answered; resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 1 {
		t.Errorf("review held for the first load: %+v, want it converted", resp.Result)
	}
	close(loaded)

	// Loaded: a kind with no converter is refused without waiting.
	r.Set(gaugeGK, nil)
	spy = doneSpy{context.Background(), make(chan struct{}), &sync.Once{}}
	if resp := send(spy); resp.Result.Status != metav1.StatusFailure {
		t.Errorf("after the first load, no converter: %+v, want a refusal", resp.Result)
	}
	select {
	case <-spy.waiting:
		t.Error("a review waited after the first load")
	default:
	}
}

// TestHandlerKeepsWhatItDoesNotConvert converts an object as the API server
// stores it: its metadata, its status and a top-level field of its own come
// back as they were, integers past 2^53 and floats included; only
// apiVersion and spec change, and managedFields, which the handler does not
// decode, are left out (the API server restores every field of metadata
// but labels and annotations from its own object: the operator's
// TestConversionWebhookRoundTrip).
func TestHandlerKeepsWhatItDoesNotConvert(t *testing.T) {
	in := `{"apiVersion":"conv.example.com/v1","kind":"Gauge",` +
		`"metadata":{"name":"a","namespace":"ns1","uid":"u-1","resourceVersion":"42","generation":9007199254740993,` +
		`"labels":{"team":"a"},"annotations":{"note":"<b>&amp;</b>"},"finalizers":["x/y"],` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"u-2"}],` +
		`"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"conv.example.com/v1","time":"2026-12-02T04:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}},` +
		`{"manager":"cueop","operation":"Apply","apiVersion":"conv.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:ratio":{},"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{}}}}},"subresource":"status"}]},` +
		`"extra":{"n":[1,2.5,"s",null,true]},` +
		`"spec":{"replicas":3},` +
		`"status":{"observedGeneration":2,"ratio":0.25,"conditions":[{"type":"Ready","status":"True"}]}}`
	h := &webhook.Handler{Registry: registry()}
	resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: "conv.example.com/v2",
		Objects: []runtime.RawExtension{{Raw: []byte(in)}}})
	if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 1 {
		t.Fatalf("result %+v, %d objects", resp.Result, len(resp.ConvertedObjects))
	}
	want, got := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	if err := want.UnmarshalJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if err := got.UnmarshalJSON(resp.ConvertedObjects[0].Raw); err != nil {
		t.Fatal(err)
	}
	want.SetAPIVersion("conv.example.com/v2")
	want.Object["spec"] = map[string]any{"size": int64(3)}
	want.SetManagedFields(nil)
	if !equality.Semantic.DeepEqual(got.Object, want.Object) {
		t.Errorf("converted:\n%s\nwant:\n%s", resp.ConvertedObjects[0].Raw, mustJSON(t, want.Object))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
