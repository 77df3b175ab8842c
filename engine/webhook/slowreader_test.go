package webhook_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestSlowReaderHoldsNoSlot: a client that sends a whole review (6 MiB,
// under the 8 MiB limit) and never reads its answer holds its slot only
// until the answer's write deadline: a review sent after it converts
// (before: the answer's write blocked, once the connection's buffers
// were full, with the slot held and the connection open for good, and
// every later review was refused with 429; as many such clients as slots
// refused the API server's conversions).
func TestSlowReaderHoldsNoSlot(t *testing.T) {
	h := &webhook.Handler{Registry: registry(), Limits: webhook.Limits{MaxConcurrent: 1, Wait: time.Millisecond, WriteTime: 2 * time.Second}}
	s := &webhook.Server{}
	s.Register(webhook.Path, h)
	addr := serveLocal(t, s)

	var objects []runtime.RawExtension
	pad := strings.Repeat("x", 100<<10)
	for i := range 60 {
		objects = append(objects, gauge("v1", fmt.Sprintf("g%d", i), `{"replicas":3,"pad":"`+pad+`"}`))
	}
	body := reviewBody(t, objects)
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // the test's own server
	if err := conn.Handshake(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhook.Path, len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	// It reads nothing more.

	c := client("127.0.0.1")
	small := reviewBody(t, []runtime.RawExtension{gauge("v1", "g", `{"replicas":3}`)})
	status := func() int {
		resp, err := c.Post("https://"+addr+webhook.Path, "application/json", bytes.NewReader(small))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	clustertest.Eventually(t, 10*time.Second, func() string {
		if got := status(); got != http.StatusTooManyRequests {
			return fmt.Sprintf("review beside the client that reads nothing: %d, want 429 while that one holds the slot", got)
		}
		return ""
	})
	clustertest.Eventually(t, 20*time.Second, func() string {
		if got := status(); got != http.StatusOK {
			return fmt.Sprintf("review after the client that reads nothing: %d, want 200 once its answer's write deadline passed", got)
		}
		return ""
	})
}
