package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/webhook"
)

// reviewBody is the JSON of a review of objects to conv.example.com/v2.
func reviewBody(t testing.TB, objects []runtime.RawExtension) []byte {
	t.Helper()
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{
		UID: "u1", DesiredAPIVersion: "conv.example.com/v2", Objects: objects}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// post sends body to h; length -1 sends it without a Content-Length.
func post(h http.Handler, body []byte, length int64) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body))
	req.ContentLength = length
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHandlerBoundsReviewSize: with the default Limits a review's body over
// 8 MiB is refused with 413 before it is decoded, with or without a
// Content-Length, and a review of more than 5,000 objects is answered with
// a Failed response naming the count and the limit, none converted.
func TestHandlerBoundsReviewSize(t *testing.T) {
	n := &atomic.Int64{}
	r := &webhook.Registry{}
	r.Set(gaugeGK, counting{webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"}, n})
	h := &webhook.Handler{Registry: r}

	big := reviewBody(t, []runtime.RawExtension{gauge("v1", "big", `{"replicas":3,"pad":"`+strings.Repeat("x", webhook.DefaultMaxBytes)+`"}`)})
	for _, length := range []int64{int64(len(big)), -1} {
		if rec := post(h, big, length); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "over the webhook's limit") {
			t.Errorf("body of %d bytes (Content-Length %d): %d %.200s, want 413 naming the limit", len(big), length, rec.Code, rec.Body)
		}
	}

	var many []runtime.RawExtension
	for i := range webhook.DefaultMaxObjects + 1 {
		many = append(many, gauge("v1", fmt.Sprintf("g%d", i), `{"replicas":3}`))
	}
	rec := post(h, reviewBody(t, many), -1)
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("answer %d %.300s: %v", rec.Code, rec.Body, err)
	}
	want := fmt.Sprintf("review of %d objects over the webhook's limit of %d", webhook.DefaultMaxObjects+1, webhook.DefaultMaxObjects)
	if out.Response.Result.Status != metav1.StatusFailure || !strings.Contains(out.Response.Result.Message, want) {
		t.Errorf("review of %d objects: %+v, want a failure with %q", len(many), out.Response.Result, want)
	}
	if got := n.Load(); got != 0 {
		t.Errorf("%d objects converted of a review over the limit, want 0", got)
	}
	if resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u2", DesiredAPIVersion: "conv.example.com/v2",
		Objects: many[:webhook.DefaultMaxObjects]}); resp.Result.Status != metav1.StatusSuccess {
		t.Errorf("review of %d objects: %+v, want converted", webhook.DefaultMaxObjects, resp.Result)
	}
}

// blocking is a converter that tells when it starts and waits for release.
type blocking struct {
	started chan string
	release chan struct{}
}

func (b blocking) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	b.started <- obj.GetName()
	<-b.release
	return webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"}.Convert(obj, to)
}

// TestHandlerBoundsConcurrentReviews: with the default Limits 4 reviews
// convert at once; a fifth, after waiting its second for a slot, is
// refused with 429 and Retry-After (the API server's client retries it)
// without being read or converted; once the 4 are answered a review
// converts again.
func TestHandlerBoundsConcurrentReviews(t *testing.T) {
	b := blocking{started: make(chan string, 10), release: make(chan struct{})}
	r := &webhook.Registry{}
	r.Set(gaugeGK, b)
	h := &webhook.Handler{Registry: r}
	done := make(chan *httptest.ResponseRecorder, webhook.DefaultMaxConcurrent)
	for i := range webhook.DefaultMaxConcurrent {
		body := reviewBody(t, []runtime.RawExtension{gauge("v1", fmt.Sprintf("g%d", i), `{"replicas":3}`)})
		go func() { done <- post(h, body, -1) }()
		<-b.started
	}
	extra := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		extra <- post(h, reviewBody(t, []runtime.RawExtension{gauge("v1", "extra", `{"replicas":3}`)}), -1)
	}()
	select {
	case name := <-b.started:
		t.Fatalf("review of %s converted beside %d others, want it refused", name, webhook.DefaultMaxConcurrent)
	case rec := <-extra:
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "reviews are being converted") {
			t.Errorf("review beyond %d: %d %q %.200s, want 429 with Retry-After", webhook.DefaultMaxConcurrent, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	close(b.release)
	for range webhook.DefaultMaxConcurrent {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("review in a slot: %d %.200s", rec.Code, rec.Body)
		}
	}
	go func() { <-b.started }()
	if resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u3", DesiredAPIVersion: "conv.example.com/v2",
		Objects: []runtime.RawExtension{gauge("v1", "after", `{"replicas":3}`)}}); resp.Result.Status != metav1.StatusSuccess {
		t.Errorf("review once the slots are free: %+v", resp.Result)
	}
}

// TestHandlerBoundsReviewTime: a review still converting after
// Limits.MaxTime stops there, its answer naming the bound (by default the
// API server's 30 s, after which nobody reads it).
func TestHandlerBoundsReviewTime(t *testing.T) {
	n := &atomic.Int64{}
	r := &webhook.Registry{}
	r.Set(gaugeGK, counting{webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"}, n})
	h := &webhook.Handler{Registry: r, Limits: webhook.Limits{MaxTime: time.Nanosecond}}
	resp := review(t, h, &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: "conv.example.com/v2",
		Objects: []runtime.RawExtension{gauge("v1", "a", `{"replicas":3}`), gauge("v1", "b", `{"replicas":3}`), gauge("v1", "c", `{"replicas":3}`)}})
	if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, "over the webhook's 1ns for one review") {
		t.Errorf("result %+v, want a failure naming the bound", resp.Result)
	}
	if got := n.Load(); got > 1 {
		t.Errorf("%d objects converted past the bound, want at most the first", got)
	}
}
