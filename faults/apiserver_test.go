package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster"
)

// namespace creates a namespace in a private control plane and waits for
// its default ServiceAccount (Pods need it). The control plane goes with
// the test, so the namespace is not deleted.
func (e *env) namespace(t *testing.T, name string) string {
	t.Helper()
	e.mustKubectl(t, "", "create", "namespace", name)
	eventually(t, 60*time.Second, func() string {
		if _, err := e.kubectl(t, "", "-n", name, "get", "serviceaccount", "default"); err != nil {
			return "no default ServiceAccount in " + name
		}
		return ""
	})
	return name
}

// TestAPIServerRestartMidConvergence stops kube-apiserver while 20
// RedisClusters converge, keeps it down for a few seconds, and starts it
// again: the operator, which saw its requests and watches fail, converges
// every CR afterwards, with exactly the children each should have (no
// duplicate) and none without a live owner (no orphan). The control plane
// is private to this test: the package's shared one stays up.
func TestAPIServerRestartMidConvergence(t *testing.T) {
	t.Parallel()
	lc, e := privateCluster(t, localcluster.Options{})
	ns := e.namespace(t, "restart")
	dir := copyTemplates(t)
	act := startOperator(t, e, dir, ns, nil)
	e.waitCRD(t, redisGVK)

	names := e.applyRedis(t, ns, "r", 20, 3)
	want := uniform(names, 3)
	eventually(t, 60*time.Second, func() string {
		if n := len(e.podUIDs(t, ns)); n < 1 {
			return "no Pod created yet"
		}
		return ""
	})
	pods, ready := len(e.podUIDs(t, ns)), e.readyCount(t, ns)
	if err := lc.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Logf("kube-apiserver stopped with %d of 60 Pods created, %d of 20 RedisClusters Ready", pods, ready)
	if ready == len(names) {
		t.Fatal("every CR had converged before the API server stopped: not mid-convergence")
	}
	time.Sleep(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lc.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("kube-apiserver down for %s", restarted.Sub(stopped).Round(time.Millisecond))

	eventually(t, 120*time.Second, func() string { return e.allRedisReady(t, ns, want) })
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, redisGVK, want) })
	t.Logf("converged %s after the restart", time.Since(restarted).Round(time.Millisecond))

	// Converged means quiet: the operator settles, and a second look then
	// finds the same children (nothing recreated behind the scenes).
	uids := e.podUIDs(t, ns)
	act.Settled(t, 0, 2*time.Minute)
	if again := e.podUIDs(t, ns); fmt.Sprint(again) != fmt.Sprint(uids) {
		t.Errorf("Pods changed after convergence:\n%v\n%v", uids, again)
	}
}
