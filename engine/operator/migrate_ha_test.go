package operator_test

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// laggingBalancer is a load balancer in front of the test's API server
// that plays two API servers, one of them late to take a CRD's change:
// every other connection it accepts goes to the late one, which answers
// the discovery of path as the API server did when the balancer started,
// until caughtUp; everything else, and every request of the other
// connections, is the API server's own answer.
type laggingBalancer struct {
	srv      *httptest.Server
	caughtUp atomic.Bool
	stale    atomic.Int32 // stale discovery answers given
	lagged   chan struct{}
}

type lateConn struct{}

func newLaggingBalancer(t *testing.T, path string, staleToSignal int32) *laggingBalancer {
	t.Helper()
	real := clustertest.Config()
	rt, err := rest.TransportFor(real)
	must(t, err)
	hc, err := rest.HTTPClientFor(real)
	must(t, err)
	target, err := url.Parse(real.Host)
	must(t, err)
	resp, err := hc.Get(target.String() + path)
	must(t, err)
	before, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)

	b := &laggingBalancer{lagged: make(chan struct{})}
	proxy := &httputil.ReverseProxy{Transport: rt, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	var conns atomic.Int32
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(lateConn{}) == true && !b.caughtUp.Load() && r.URL.Path == path {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(before)
			if b.stale.Add(1) == staleToSignal {
				close(b.lagged)
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	b.srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, lateConn{}, conns.Add(1)%2 == 0)
	}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

// config is a client config of the balancer.
func (b *laggingBalancer) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
	return &rest.Config{Host: b.srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// TestStorageMigrationWaitsForEveryAPIServer: with two API servers behind
// one address, one of them still storing at v1 after the storage version
// moved to v2, the migration does not start on the other's word: it reads
// the storage version hash over a new connection each time, and starts
// only once every read, whichever API server answers it, gives v2's.
func TestStorageMigrationWaitsForEveryAPIServer(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	shelvesSwitched(t, c, ns, 3, false)
	b := newLaggingBalancer(t, "/apis/migrate.example.com/v2", 3)
	setStorage(t, c, "v2")

	m := &migrate.Migrator{Reader: c, Client: c, Config: b.config()}
	type result struct {
		p   migrate.Progress
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := m.Run(t.Context(), shelfCRD)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("migration ran (%v, error %v) while an API server behind the balancer still stored at v1", r.p, r.err)
	case <-b.lagged:
	case <-time.After(60 * time.Second):
		t.Fatal("no discovery read reached the late API server")
	}
	b.caughtUp.Store(true)
	caught := time.Now()
	select {
	case r := <-done:
		if r.err != nil || !r.p.Done {
			t.Fatalf("migration after every API server caught up: %v, error %v", r.p, r.err)
		}
		t.Logf("migration done %s after the late API server caught up (%d stale answers read before)", time.Since(caught).Round(10*time.Millisecond), b.stale.Load())
	case <-time.After(60 * time.Second):
		t.Fatal("migration not done 60 s after every API server caught up")
	}
	if got := getCRD(t, c).Status.StoredVersions; len(got) != 1 || got[0] != "v2" {
		t.Fatalf("storedVersions = %v, want [v2]", got)
	}
}
