package webhook_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/webhook"
)

// TestHandlerBoundsBodyRead: clients that send a review's headers and then
// its body never (a slot is held while the body is read) hold their slots
// no longer than Limits.MaxTime: a review sent meanwhile is converted, not
// refused with 429 once every slot is held for good.
func TestHandlerBoundsBodyRead(t *testing.T) {
	r := &webhook.Registry{}
	r.Set(gaugeGK, webhook.Rename{HubVersion: "v1", Hub: "replicas", Spoke: "size"})
	h := &webhook.Handler{Registry: r, Limits: webhook.Limits{MaxTime: 300 * time.Millisecond, Wait: 5 * time.Second}}
	entered := make(chan struct{}, webhook.DefaultMaxConcurrent+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		entered <- struct{}{}
		h.ServeHTTP(w, req)
	}))
	defer srv.Close()

	answers := make(chan string, webhook.DefaultMaxConcurrent)
	for range webhook.DefaultMaxConcurrent {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", webhook.Path)
		<-entered
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				answers <- err.Error()
				return
			}
			resp.Body.Close()
			answers <- resp.Status
		}()
	}

	body := reviewBody(t, []runtime.RawExtension{gauge("v1", "g", `{"replicas":3}`)})
	start := time.Now()
	resp, err := http.Post(srv.URL+webhook.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-entered
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("review beside %d stalled bodies: %s after %s, want converted once their time is up", webhook.DefaultMaxConcurrent, resp.Status, time.Since(start).Round(time.Millisecond))
	}
	for range webhook.DefaultMaxConcurrent {
		if a := <-answers; a == "" {
			t.Errorf("stalled body: no answer")
		}
	}
}
