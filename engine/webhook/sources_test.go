package webhook_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// serveLocal serves s on 127.0.0.1 with certificates of its own, with a
// /ok that answers 200, until the test ends.
func serveLocal(t *testing.T, s *webhook.Server) string {
	t.Helper()
	certs, err := webhook.LocalCerts()
	if err != nil {
		t.Fatal(err)
	}
	s.TLS = &tls.Config{GetCertificate: certs.GetCertificate}
	s.Register("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(webhook.ServeOn(s, l))
	return l.Addr().String()
}

// dialFrom opens a TCP connection to addr from the local address ip
// (127.0.0.0/8 is all the loopback's).
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin tells whether the server closes c, which sent nothing,
// within d.
func closedWithin(c net.Conn, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("connection not closed within %s", d)
	case err == nil:
		return fmt.Errorf("connection answered %d bytes, want closed", n)
	}
	return nil // EOF, or reset
}

// client is an HTTP client of its own (its own connections) that trusts
// any certificate, from the local address ip.
func client(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     d.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test's own server
	}}
}

func get(t *testing.T, c *http.Client, addr string) {
	t.Helper()
	resp, err := c.Get("https://" + addr + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ok: %s", resp.Status)
	}
}

// TestServerBoundsConnectionsPerSource: with MaxConnections 8 and 2 per
// source, a client opening 6 connections from 127.0.0.2 holds 2; the
// others are closed as soon as accepted, not left in the accept queue,
// and a client from another address is served meanwhile (before: the
// 6 held 6 of the 8, and 8 held them all).
func TestServerBoundsConnectionsPerSource(t *testing.T) {
	s := &webhook.Server{MaxConnections: 8, MaxConnectionsPerSource: 2}
	addr := serveLocal(t, s)
	var conns []net.Conn
	for range 6 {
		conns = append(conns, dialFrom(t, "127.0.0.2", addr))
	}
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Open() != 2 || s.Refused() != 4 {
			return fmt.Sprintf("%d open, %d refused; want 2 open from 127.0.0.2, 4 refused", s.Open(), s.Refused())
		}
		return ""
	})
	closed := 0
	for _, c := range conns {
		if closedWithin(c, 200*time.Millisecond) == nil {
			closed++
		}
	}
	if closed != 4 {
		t.Errorf("%d of the 6 connections closed, want the 4 beyond the bound", closed)
	}
	get(t, client("127.0.0.1"), addr)
}

// TestServerClosesSlowAndIdleConnections: a connection that sends no
// request within RequestTime is closed; and when every connection is
// open, a new one is served by closing the one idle longest (a keep-alive
// connection between requests).
func TestServerClosesSlowAndIdleConnections(t *testing.T) {
	s := &webhook.Server{MaxConnections: 2, RequestTime: 300 * time.Millisecond}
	addr := serveLocal(t, s)
	slow := dialFrom(t, "127.0.0.2", addr)
	if err := closedWithin(slow, 10*time.Second); err != nil {
		t.Fatalf("a connection that sent nothing: %v", err)
	}

	// Two keep-alive connections, idle after a request each, hold the
	// bound.
	a, b := client("127.0.0.3"), client("127.0.0.4")
	get(t, a, addr)
	get(t, b, addr)
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Open() != 2 {
			return fmt.Sprintf("%d open, want the 2 idle keep-alive connections", s.Open())
		}
		return ""
	})
	get(t, client("127.0.0.5"), addr)
	if s.Evicted() < 1 {
		t.Errorf("%d idle connections closed for the new one, want 1", s.Evicted())
	}
}

// TestServerEvictsFromTheBusiestSource: with every slot taken, a new
// connection closes one of the source holding the most, never the
// keep-alive connection of a client holding fewer (the API server's,
// beside a flood from several addresses; before: the one idle
// connection, the client's, was closed for the flood's).
func TestServerEvictsFromTheBusiestSource(t *testing.T) {
	s := &webhook.Server{MaxConnections: 4, MaxConnectionsPerSource: 2}
	addr := serveLocal(t, s)
	legit := client("127.0.0.9")
	reused := func() bool {
		var r bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { r = i.Reused }})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/ok", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := legit.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return r
	}
	reused()
	dialFrom(t, "127.0.0.2", addr)
	dialFrom(t, "127.0.0.2", addr)
	dialFrom(t, "127.0.0.3", addr)
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Open() != 4 {
			return fmt.Sprintf("%d open, want 4: the client's and the flood's 3", s.Open())
		}
		return ""
	})
	dialFrom(t, "127.0.0.3", addr)
	clustertest.Eventually(t, 10*time.Second, func() string {
		if s.Evicted() != 1 || s.Open() != 4 {
			return fmt.Sprintf("%d evicted, %d open; want one of 127.0.0.2's closed for 127.0.0.3's second", s.Evicted(), s.Open())
		}
		return ""
	})
	if !reused() {
		t.Errorf("the client's keep-alive connection was closed for the flood's")
	}
}
