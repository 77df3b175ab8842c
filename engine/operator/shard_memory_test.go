package operator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"

	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// shardMemCRs is the number of CRs TestShardCacheMemory caches.
const shardMemCRs = 400

// TestShardCacheMemory builds the CR cache of a namespace of 400 CRs three
// ways: unsharded, range 0 of 2 filtered by the API server, and range 0
// of 2 filtered by the client (shardSelector stripped, as an API server
// without the gate ignores it). Both filters cache exactly the range's
// CRs; the test logs what each cache holds on the heap, the bytes it
// received and what it allocated to fill itself (docs/operating.md,
// "Without the feature gate").
func TestShardCacheMemory(t *testing.T) {
	ns := clustertest.Namespace(t)
	gvk := schema.GroupVersionKind{Group: "shardmem.example.com", Version: "v1", Kind: "Sized"}
	mustKubectl(t, testCRD(gvk.Group, gvk.Kind, preserveSpec), "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "sizeds."+gvk.Group, "--wait=false") })
	mustKubectl(t, "", "wait", "--for=condition=Established", "crd/sizeds."+gvk.Group)
	var docs []string
	for i := range shardMemCRs {
		docs = append(docs, fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: c%d, namespace: %s, labels: {app: redis, team: t%d}}\n"+
			"spec: {replicas: 3, version: \"7.0\", memory: 1Gi, settingsFrom: {name: settings}, persistence: {size: 10Gi, class: standard}, "+
			"config: {maxmemory-policy: allkeys-lru, appendonly: \"yes\", timeout: \"300\"}}\n", gvk.GroupVersion(), gvk.Kind, i, ns, i%7))
	}
	mustKubectl(t, strings.Join(docs, "---\n"), "apply", "--server-side", "-f", "-")
	r := shard.Ranges(2)[0]
	measureCRCache(t, ns, gvk, nil, false) // warms the client's discovery and the types up
	for _, m := range []struct {
		name   string
		rng    *shard.Range
		noGate bool
	}{{"unsharded", nil, false}, {"filter=apiserver", &r, false}, {"filter=client", &r, true}} {
		c := measureCRCache(t, ns, gvk, m.rng, m.noGate)
		t.Logf("%s: %d CRs cached, heap %.2f MiB (%.1f KiB per CR cached), %.2f MiB received, %.2f MiB allocated",
			m.name, c.items, mib(c.heap), float64(c.heap)/1024/float64(max(c.items, 1)), mib(c.received), mib(c.allocated))
		want := shardMemCRs
		if m.rng != nil {
			want = c.inRange
		}
		if c.items != want || c.strays != 0 {
			t.Errorf("%s: %d CRs cached (%d of other ranges), want %d", m.name, c.items, c.strays, want)
		}
	}
}

type crCacheCost struct {
	items, inRange, strays    int
	heap, received, allocated uint64
}

// measureCRCache fills a CR cache of ns's CRs of gvk (of r only, when r is
// set) and measures it.
func measureCRCache(t *testing.T, ns string, gvk schema.GroupVersionKind, r *shard.Range, noGate bool) crCacheCost {
	t.Helper()
	var received atomic.Uint64
	cfg := clustertest.Config()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return bytesTransport{rt, &received, noGate} })
	opts := cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
	opts = operator.ShardParents(opts, r)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	defer func() { cancel(); <-stopped }() // the next measure starts without this cache
	go func() { defer close(stopped); _ = c.Start(ctx) }()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list); err != nil { // waits for the cache to sync
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	out := crCacheCost{items: len(list.Items), received: received.Load(),
		heap: after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), allocated: after.TotalAlloc - before.TotalAlloc}
	for _, cr := range list.Items {
		if r != nil && !r.Contains(string(cr.GetUID())) {
			out.strays++
		}
	}
	all := &unstructured.UnstructuredList{}
	all.SetGroupVersionKind(list.GroupVersionKind())
	if err := newClient(t).List(ctx, all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cr := range all.Items {
		if r == nil || r.Contains(string(cr.GetUID())) {
			out.inRange++
		}
	}
	runtime.KeepAlive(c)
	return out
}

// bytesTransport counts the response bytes received, and drops
// shardSelector with noGate.
type bytesTransport struct {
	rt       http.RoundTripper
	received *atomic.Uint64
	noGate   bool
}

func (c bytesTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.noGate {
		req = withoutShardSelector(req)
	}
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = bytesBody{resp.Body, c.received}
	}
	return resp, err
}

type bytesBody struct {
	io.ReadCloser
	n *atomic.Uint64
}

func (b bytesBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(uint64(n))
	return n, err
}
