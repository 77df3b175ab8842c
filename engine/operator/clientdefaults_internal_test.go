package operator

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestClientDefaults: cueop's clients ask for no compression unless told
// to, take its rate limits where the config sets none, and leave the
// caller's config as it was.
func TestClientDefaults(t *testing.T) {
	in := &rest.Config{Host: "https://127.0.0.1:1"}
	got := clientDefaults(in, Options{})
	if !got.DisableCompression || got.QPS != DefaultQPS || got.Burst != DefaultBurst {
		t.Errorf("defaults: compression off %v, qps %v, burst %d; want true, %v, %d", got.DisableCompression, got.QPS, got.Burst, DefaultQPS, DefaultBurst)
	}
	if in.DisableCompression || in.QPS != 0 {
		t.Errorf("the caller's config changed: %+v", in)
	}
	got = clientDefaults(&rest.Config{QPS: 7, Burst: 9}, Options{APICompression: true})
	if got.DisableCompression || got.QPS != 7 || got.Burst != 9 {
		t.Errorf("APICompression and QPS 7: compression off %v, qps %v, burst %d", got.DisableCompression, got.QPS, got.Burst)
	}
}
