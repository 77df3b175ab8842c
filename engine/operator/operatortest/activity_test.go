package operatortest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/operator"
)

// TestActivity feeds an Activity the log lines controller-runtime writes
// around reconciles, and requests through its transport.
func TestActivity(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var opts operator.Options
	cfg, a := Observe(&rest.Config{Host: srv.URL}, &opts)
	log := opts.Manager.Logger.WithName("cueop").WithValues("kind", "Waiter")
	ctrlLog := log.WithValues("controller", "cueop-waiter")
	reconcile := func(name string, err error) {
		l := ctrlLog.WithValues("namespace", "ns", "name", name, "reconcileID", "x")
		l.V(5).Info("Reconciling")
		if why := a.Busy(time.Hour); !strings.Contains(why, "1 reconciles under way") {
			t.Errorf("Busy during a reconcile = %q", why)
		}
		if err != nil {
			l.Error(err, "Reconciler error")
		} else {
			l.V(5).Info("Reconcile successful")
		}
	}

	if why := a.Busy(time.Hour); why != "" {
		t.Errorf("Busy before anything = %q", why)
	}
	reconcile("w", nil)
	reconcile("w", errors.New("refused"))
	reconcile("v", nil)
	if n := a.Reconciles(); n != 3 {
		t.Errorf("Reconciles = %d, want 3", n)
	}
	if n := a.ReconcilesOf("controller", "cueop-waiter", "name", "w"); n != 2 {
		t.Errorf("ReconcilesOf(w) = %d, want 2", n)
	}
	if why := a.Busy(time.Hour); !strings.Contains(why, "last reconcile ended") {
		t.Errorf("Busy right after a reconcile = %q", why)
	}
	a.Settled(t, 50*time.Millisecond, 10*time.Second)

	log.Info("kind removed: controller stopped", "package", "waiter")
	if got := a.WaitLog(t, time.Second, "kind removed", "kind", "Waiter", "package", "waiter"); got.Values["package"] != "waiter" {
		t.Errorf("WaitLog = %+v", got)
	}
	if got := a.Logged("kind removed", "kind", "Other"); len(got) != 0 {
		t.Errorf("Logged for another kind = %+v", got)
	}

	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodGet, http.MethodPatch, http.MethodPost} {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := a.Writes(); n != 2 {
		t.Errorf("Writes = %d, want 2 (PATCH and POST)", n)
	}
	if why := a.Busy(time.Hour); !strings.Contains(why, "last write request ended") {
		t.Errorf("Busy right after a write = %q", why)
	}
}
