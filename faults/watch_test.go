package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/localcluster"
)

// watchExpired says why a watch of the RedisClusters of ns from rv is
// still served, or "" once the API server refuses it as expired (410).
func watchExpired(t *testing.T, e *env, ns, rv string) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: redisGVK.Group, Version: redisGVK.Version, Resource: "redisclusters"}
	w, err := dyn.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return ""
		}
		return "watch: " + err.Error()
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return "watch closed without an event"
		}
		if ev.Type == watch.Error {
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return ""
			}
			return fmt.Sprintf("watch error event: %v", ev.Object)
		}
		return fmt.Sprintf("a watch from resourceVersion %s is still served (%s event)", rv, ev.Type)
	case <-ctx.Done():
		return "no event from the watch"
	}
}

// auditCount counts the audit events of userAgent with verb on resource
// received after since. The verb "watchlist" stands for a watch that
// starts with the current objects (sendInitialEvents=true): client-go's
// list.
func auditCount(t *testing.T, path, userAgent, verb, resource string, since time.Time) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Stage, Verb, UserAgent   string
			RequestURI               string
			RequestReceivedTimestamp metav1.MicroTime
			ObjectRef                *struct{ Resource string }
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		// A request counts once: a watch when it starts (it may run for
		// minutes), any other request when it completes.
		if ev.Verb == "watch" {
			if ev.Stage != "ResponseStarted" {
				continue
			}
			if strings.Contains(ev.RequestURI, "sendInitialEvents=true") {
				ev.Verb = "watchlist"
			}
		} else if ev.Stage != "ResponseComplete" {
			continue
		}
		if ev.UserAgent == userAgent && ev.Verb == verb && ev.ObjectRef != nil && ev.ObjectRef.Resource == resource &&
			ev.RequestReceivedTimestamp.After(since) {
			n++
		}
	}
	return n
}

// TestWatchExpiredWhileDisconnected cuts the operator off its API server
// while 20 RedisClusters converge (every connection closed, new ones
// refused), changes CRs meanwhile (one scaled up, one scaled down, one
// created) and waits until etcd has compacted the history the operator's
// watches would resume from: a watch from the last resourceVersion the
// operator can have seen is refused with 410 Gone. Once the line is back,
// the operator relists and converges every CR to its current spec. The
// private API server runs without its watch cache and compacts every 2s,
// so that the expiry happens in seconds rather than minutes.
func TestWatchExpiredWhileDisconnected(t *testing.T) {
	t.Parallel()
	lc, e := privateCluster(t, localcluster.Options{AuditLog: true, ExtraArgs: map[string][]string{
		localcluster.KubeAPIServer: {"--watch-cache=false", "--etcd-compaction-interval=2s"},
	}})
	ns := e.namespace(t, "expiry")
	proxy := newCutProxy(t, strings.TrimPrefix(lc.Config.Host, "https://"))
	const agent = "cueop-under-test/1.0"
	cfg := rest.CopyConfig(lc.Config)
	cfg.Host, cfg.UserAgent = "https://"+proxy.addr, agent
	startOperator(t, e, copyTemplates(t), ns, cfg)
	e.waitCRD(t, redisGVK)

	names := e.applyRedis(t, ns, "w", 20, 3)
	want := uniform(names, 3)
	eventually(t, 60*time.Second, func() string {
		if n := e.readyCount(t, ns); n < 1 {
			return fmt.Sprintf("%d RedisClusters Ready", n)
		}
		return ""
	})
	proxy.cut()
	cutAt := time.Now()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(redisGVK.GroupVersion().WithKind("RedisClusterList"))
	if err := e.c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	rv := list.GetResourceVersion() // the operator has seen nothing newer
	ready := e.readyCount(t, ns)
	t.Logf("operator cut off at resourceVersion %s with %d of 20 RedisClusters Ready", rv, ready)

	e.mustKubectl(t, "", "-n", ns, "scale", "redisclusters.v1.cache.example.com/w-0", "--replicas=5")
	e.mustKubectl(t, "", "-n", ns, "scale", "redisclusters.v1.cache.example.com/w-1", "--replicas=1")
	e.mustKubectl(t, redisYAML(ns, "w-20", 3), "apply", "-f", "-")
	want["w-0"], want["w-1"], want["w-20"] = 5, 1, 3
	eventually(t, 60*time.Second, func() string { return watchExpired(t, e, ns, rv) })
	t.Logf("a watch from resourceVersion %s is refused with 410 Gone %s after the cut", rv, time.Since(cutAt).Round(time.Millisecond))

	proxy.restore(t)
	restoredAt := time.Now()
	eventually(t, 120*time.Second, func() string { return e.allRedisReady(t, ns, want) })
	t.Logf("every RedisCluster Ready %s after the line came back", time.Since(restoredAt).Round(time.Millisecond))
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, redisGVK, want) })
	t.Logf("children exact %s after the line came back (%s .. %s)", time.Since(restoredAt).Round(time.Millisecond), restoredAt.UTC().Format("15:04:05.000"), time.Now().UTC().Format("15:04:05.000"))
	// The operator cannot have seen the changes through a watch resumed
	// from its last resourceVersion: it relisted, as a LIST or as a
	// watch-list (a watch that sends the current objects first).
	if n := auditCount(t, lc.AuditLogPath(), agent, "list", "redisclusters", restoredAt) +
		auditCount(t, lc.AuditLogPath(), agent, "watchlist", "redisclusters", restoredAt); n < 1 {
		t.Errorf("the operator did not relist RedisClusters after the line came back (audit log)")
	}
}
