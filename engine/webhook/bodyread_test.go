package webhook_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestSlowBodiesHoldNoSlot: 12 clients that send a review's headers and
// one byte of its body (more than the 4 slots) hold no slot: a review
// sent meanwhile is converted at once (before: each held a slot while its
// body was read, for 30 s, and the review was refused with 429).
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	h := &webhook.Handler{Registry: registry()}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range 3 * webhook.DefaultMaxConcurrent {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", webhook.Path)
	}
	gaugeConverted(t, srv.URL, fmt.Sprintf("beside %d stalled bodies", 3*webhook.DefaultMaxConcurrent))
}

// gaugeConverted posts a review of one Gauge to the webhook at url and
// fails the test unless it is answered 200 OK; beside says what else the
// webhook is serving.
func gaugeConverted(t *testing.T, url, beside string) {
	t.Helper()
	body := reviewBody(t, []runtime.RawExtension{gauge("v1", "g", `{"replicas":3}`)})
	resp, err := http.Post(url+webhook.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("review %s: %s, want converted", beside, resp.Status)
	}
}

// TestDeclaredLengthsReserveNothing: 170 clients that declare a body of
// 8 MB (under the limit) and send one byte of it reserve a few hundred
// bytes each of the bytes read at once, not the length they declared: a
// review sent meanwhile is converted (before: each reserved 512 KiB at
// once, 160 of them held the whole 80 MiB, and the review was refused
// with 429 for as long as they stalled).
func TestDeclaredLengthsReserveNothing(t *testing.T) {
	h := &webhook.Handler{Registry: registry()}
	srv := httptest.NewServer(h)
	defer srv.Close()
	const clients = 170
	for range clients {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8000000\r\n\r\n{", webhook.Path)
	}
	// Every client's body is being read once each reserved its start.
	clustertest.Eventually(t, 10*time.Second, func() string {
		if n := webhook.Reading(h); n < clients*512 {
			return fmt.Sprintf("%d bytes being read, want %d", n, clients*512)
		}
		return ""
	})
	if got := webhook.Reading(h); got > clients*4096 {
		t.Errorf("%d clients that sent a byte reserve %d bytes, want at most %d", clients, got, clients*4096)
	}
	gaugeConverted(t, srv.URL, fmt.Sprintf("beside %d stalled 8 MB bodies", clients))
}

// TestHandlerBoundsBodyRead: a body not sent within Limits.BodyTime ends
// its connection, answered.
func TestHandlerBoundsBodyRead(t *testing.T) {
	h := &webhook.Handler{Registry: registry(), Limits: webhook.Limits{BodyTime: 200 * time.Millisecond}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", webhook.Path)
	if status, err := answeredAndClosed(conn, 10*time.Second); err != nil || status != http.StatusBadRequest {
		t.Errorf("stalled body: %d %v, want 400 and the connection closed", status, err)
	}
}

// TestRefusedConnectionsAreClosed: 1,000 reviews refused with 429 (the
// one slot held by a review converting) are each answered and their
// connections closed by the webhook (before: a refused review's unread
// body under 256 KiB was waited for, and its connection stayed open:
// thousands of them held the operator's files and memory), and so are
// reviews refused with 413 by their Content-Length, headers alone sent.
func TestRefusedConnectionsAreClosed(t *testing.T) {
	b := blocking{started: make(chan string, 1), release: make(chan struct{})}
	r := &webhook.Registry{}
	r.Set(gaugeGK, b)
	h := &webhook.Handler{Registry: r, Limits: webhook.Limits{MaxConcurrent: 1, Wait: time.Millisecond, MaxBytes: 64 << 10}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := reviewBody(t, []runtime.RawExtension{gauge("v1", "g", `{"replicas":3}`)})
	held := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL+webhook.Path, "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	<-b.started
	defer func() { close(b.release); <-held }()

	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 200) // connections open at once in the test
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			want := http.StatusTooManyRequests
			if i%2 == 0 {
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", webhook.Path, len(body), body)
			} else { // declared over MaxBytes, under the server's 256 KiB of unread body it drains
				want = http.StatusRequestEntityTooLarge
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", webhook.Path, 128<<10)
			}
			status, err := answeredAndClosed(conn, 20*time.Second)
			if err == nil && status != want {
				err = fmt.Errorf("status %d, want %d", status, want)
			}
			if err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 3 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d refused connections not answered and closed", failed, n)
	}
}

// answeredAndClosed reads conn's response and then waits for the server
// to close conn, within d.
func answeredAndClosed(conn net.Conn, d time.Duration) (int, error) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, fmt.Errorf("no answer: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !strings.Contains(fmt.Sprint(err), "reset") {
		return resp.StatusCode, fmt.Errorf("answered %d, connection not closed: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// TestServerBoundsConnections: with MaxConnections 4, six clients that
// connect and send nothing hold 4 connections of the server; the others
// wait to be accepted, and are once one closes.
func TestServerBoundsConnections(t *testing.T) {
	s := &webhook.Server{MaxConnections: 4, TLS: &tls.Config{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer webhook.ServeOn(s, l)()
	var conns []net.Conn
	for range 6 {
		c, err := net.Dial("tcp", l.Addr().String()) // the kernel's accept queue takes it
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Open() != 4 {
			return fmt.Sprintf("%d connections open, want the bound, 4", s.Open())
		}
		return ""
	})
	conns[0].Close()
	conns[1].Close()
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Open() != 4 || s.Accepted() != 6 {
			return fmt.Sprintf("%d open, %d accepted; want 4 open, 6 accepted", s.Open(), s.Accepted())
		}
		return ""
	})
}
