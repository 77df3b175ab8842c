package operator_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The shard Leases' timing in the sharding tests: short, for a quick
// handover; a replica that cannot renew stops serving 2 s before its
// Leases expire.
const (
	shardLease = 6 * time.Second
	shardRenew = 4 * time.Second
	shardRetry = 500 * time.Millisecond
	// shardHandoff bounds a handover in the tests: a takeover waits one
	// lease duration, then the new holder's caches and reconcile. The
	// lease + 5 s target is measured by make bench-shards; under -race on
	// a loaded machine the tests allow more, so they fail only when a
	// takeover waits for something else (a second lease, a resync).
	shardHandoff = 2*shardLease + 15*time.Second
)

// statusWriters records which replica wrote which object of the test's
// namespace (a CR's status, a child).
type statusWriters struct {
	mu      sync.Mutex
	writers map[string]map[string]bool // object name → replicas
}

var objectPath = regexp.MustCompile(`/namespaces/[^/]+/[^/]+/([^/]+)(/status)?$`)

// of are the replicas that wrote CR name's status or one of its children
// (the objects named name or name-*).
func (s *statusWriters) of(name string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for obj, replicas := range s.writers {
		if obj == name || strings.HasPrefix(obj, name+"-") {
			for r := range replicas {
				out[r] = true
			}
		}
	}
	return out
}

// replicaTransport records status writes. With noGate it drops
// shardSelector from every request, as an API server without the
// ShardedListAndWatch gate ignores it.
type replicaTransport struct {
	rt     http.RoundTripper
	id     string
	status *statusWriters
	noGate bool
}

func (r replicaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.noGate {
		req = withoutShardSelector(req)
	}
	if req.Method != http.MethodGet {
		if m := objectPath.FindStringSubmatch(req.URL.Path); m != nil {
			r.status.mu.Lock()
			if r.status.writers[m[1]] == nil {
				r.status.writers[m[1]] = map[string]bool{}
			}
			r.status.writers[m[1]][r.id] = true
			r.status.mu.Unlock()
		}
	}
	return r.rt.RoundTrip(req)
}

// withoutShardSelector is req without the shardSelector query parameter.
func withoutShardSelector(req *http.Request) *http.Request {
	q := req.URL.Query()
	if !q.Has("shardSelector") {
		return req
	}
	req = req.Clone(req.Context())
	q.Del("shardSelector")
	req.URL.RawQuery = q.Encode()
	return req
}

type shardReplica struct {
	*operator.Sharded
	cut  testkit.Cut // off the API server, as a crash or a partition would
	stop func()
}

// forEachFilter runs test once per filter: by the API server (this
// package's cluster has the ShardedListAndWatch gate) and by the client
// (the replicas' requests stripped of shardSelector, as an API server
// without the gate ignores it). Only the client filter drops objects.
func forEachFilter(t *testing.T, test func(t *testing.T, f shard.Filter)) {
	for _, f := range []shard.Filter{shard.ByAPIServer, shard.ByClient} {
		t.Run(string(f), func(t *testing.T) {
			before := metricSum(t, "cueop_shard_client_dropped_total")
			test(t, f)
			dropped := metricSum(t, "cueop_shard_client_dropped_total") - before
			if f == shard.ByAPIServer && dropped != 0 {
				t.Errorf("the client filter dropped %v objects of other ranges: the API server did not filter", dropped)
			}
			if f == shard.ByClient && dropped == 0 {
				t.Error("the client filter dropped no object of another range: did the API server filter?")
			}
		})
	}
}

// startShardReplica runs a sharded replica (2 shards) on the templates of
// dir, serving namespace ns, until the test ends; its ranges are filtered
// by f (forEachFilter).
func startShardReplica(t *testing.T, dir, ns, id string, f shard.Filter, status *statusWriters) *shardReplica {
	t.Helper()
	r := &shardReplica{}
	cfg := clustertest.Config()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return replicaTransport{rt, id, status, f == shard.ByClient}
	})
	cfg.Wrap(r.cut.Wrap) // before the rest
	s, err := operator.NewSharded(cfg, operatortest.Options(dir, ns), operator.Sharding{
		Shards: 2, Identity: id, Namespace: ns,
		LeaseDuration: shardLease, RenewDeadline: shardRenew, RetryPeriod: shardRetry,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Sharded = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !r.cut.Load() {
			t.Errorf("replica %s: %v", id, err)
		}
	}
	t.Cleanup(r.stop)
	eventually(t, 30*time.Second, func() string {
		if metricSum(t, "cueop_shard_filter", "replica", id, "filter", string(f)) != 1 {
			return fmt.Sprintf("replica %s: cueop_shard_filter{filter=%q} not 1", id, f)
		}
		return ""
	})
	return r
}

// watchUntil watches the objects of resource gvr in ns until cond, given
// them by name, returns "" (else why not yet); it fails the test after
// timeout with cond's last answer.
func watchUntil(t *testing.T, timeout time.Duration, gvr schema.GroupVersionResource, ns string, cond func(map[string]*unstructured.Unstructured) string) {
	t.Helper()
	dc, err := dynamic.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	res := dc.Resource(gvr).Namespace(ns)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	objs := map[string]*unstructured.Unstructured{}
	why := "no event yet"
	check := func() bool {
		why = cond(objs)
		return why == ""
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	_, err = watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, func(store toolscache.Store) (bool, error) {
		for _, o := range store.List() {
			u := o.(*unstructured.Unstructured)
			objs[u.GetName()] = u
		}
		return check(), nil
	}, func(ev watch.Event) (bool, error) {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			if ev.Type == watch.Deleted {
				delete(objs, u.GetName())
			} else {
				objs[u.GetName()] = u
			}
		}
		return check(), nil
	})
	if err != nil {
		t.Fatalf("%s in %s: %s (%v)", gvr.Resource, ns, why, err)
	}
}

var (
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
	redisGVR  = redisGVK.GroupVersion().WithResource("redisclusters")
	podsGVR   = corev1.SchemeGroupVersion.WithResource("pods")
)

// shardHolders are the holders of the 2 shard Leases, by range index.
func shardHolders(objs map[string]*unstructured.Unstructured) []string {
	out := make([]string, 2)
	for _, r := range shard.Ranges(2) {
		if l := objs[r.LeaseName()]; l != nil {
			out[r.Index], _, _ = unstructured.NestedString(l.Object, "spec", "holderIdentity")
		}
	}
	return out
}

// crsReady is a watchUntil condition: every CR of names is Ready at its
// generation.
func crsReady(names ...string) func(map[string]*unstructured.Unstructured) string {
	return func(objs map[string]*unstructured.Unstructured) string {
		for _, n := range names {
			cr := objs[n]
			if cr == nil {
				return n + " absent"
			}
			gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
			if conditionStatus(cr, "Ready") != "True" || gen != cr.GetGeneration() {
				return fmt.Sprintf("%s not ready: %v", n, cr.Object["status"])
			}
		}
		return ""
	}
}

// Two replicas share 2 shard ranges, one each; each CR is reconciled by
// the replica holding its range only (its status and children written by
// that replica alone), and its children carry the range's label. A replica cut off from the API server (as if it crashed) loses its
// ranges: the other takes them over and repairs a drifted child of one of
// its CRs within the lease duration and 5 s. Filtered by the API server
// and by the client alike.
func TestShardedReplicasHandOver(t *testing.T) { forEachFilter(t, testShardedReplicasHandOver) }

func testShardedReplicasHandOver(t *testing.T, f shard.Filter) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	status := &statusWriters{writers: map[string]map[string]bool{}}
	replicas := map[string]*shardReplica{
		"a": startShardReplica(t, dir, ns, "a", f, status),
		"b": startShardReplica(t, dir, ns, "b", f, status),
	}
	watchUntil(t, 60*time.Second, leasesGVR, ns, func(objs map[string]*unstructured.Unstructured) string {
		if h := shardHolders(objs); !(h[0] != "" && h[1] != "" && h[0] != h[1]) {
			return fmt.Sprintf("shard Leases held by %v, want one each", h)
		}
		return ""
	})
	waitCRD(t)
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("s%d", i))
		mustKubectl(t, redisYAML(ns, names[i], 1, "7.0"), "apply", "-f", "-")
	}
	watchUntil(t, 90*time.Second, redisGVR, ns, crsReady(names...))

	c := newClient(t)
	holders := map[int]string{}
	for _, r := range shard.Ranges(2) {
		lease := &coordinationv1.Lease{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: r.LeaseName()}, lease); err != nil {
			t.Fatal(err)
		}
		holders[r.Index] = *lease.Spec.HolderIdentity
	}
	byRange := map[int][]string{}
	for _, n := range names {
		cr := getCR(t, c, ns, n)
		r := shard.Of(string(cr.GetUID()), 2)
		byRange[r.Index] = append(byRange[r.Index], n)
		want := holders[r.Index]
		if got := status.of(n); len(got) != 1 || !got[want] {
			t.Errorf("%s (range %s, held by %s): status and children written by %v, want by %s only", n, r, want, got, want)
		}
		for _, p := range listPods(t, c, ns, n) {
			if l := p.GetLabels()[wellknown.LabelShard]; l != r.Label() {
				t.Errorf("pod %s of %s: %s=%q, want %q", p.GetName(), n, wellknown.LabelShard, l, r.Label())
			}
		}
	}
	t.Logf("CRs by range: %v; ranges held by %v", byRange, holders)
	for _, id := range []string{"a", "b"} {
		if got := rangesHeld(t, id); got != 1 {
			t.Errorf("cueop_shard_ranges_held{replica=%q} = %v, want 1", id, got)
		}
	}

	// Cut off the holder of the range of s0, and drift a child of s0.
	victim := getCR(t, c, ns, "s0")
	lost := shard.Of(string(victim.GetUID()), 2)
	dead, survivor := holders[lost.Index], "a"
	if dead == "a" {
		survivor = "b"
	}
	replicas[dead].cut.Store(true)
	cut := time.Now()
	mustKubectl(t, "", "-n", ns, "label", "pod", "s0-0", "app=hijacked", "--overwrite")
	watchUntil(t, 60*time.Second, leasesGVR, ns, func(objs map[string]*unstructured.Unstructured) string {
		if h := shardHolders(objs); h[0] != survivor || h[1] != survivor {
			return fmt.Sprintf("shard Leases held by %v, want both by %s", h, survivor)
		}
		return ""
	})
	takeover := time.Since(cut)
	watchUntil(t, 60*time.Second, podsGVR, ns, func(objs map[string]*unstructured.Unstructured) string {
		if p := objs["s0-0"]; p == nil || p.GetLabels()["app"] != "redis" {
			return "pod s0-0 not repaired"
		}
		return ""
	})
	repaired := time.Since(cut)
	t.Logf("replica %s cut off: its ranges taken over by %s after %s, the drifted child repaired after %s (lease %s)",
		dead, survivor, takeover.Round(100*time.Millisecond), repaired.Round(100*time.Millisecond), shardLease)
	if repaired > shardHandoff {
		t.Errorf("drifted child repaired %s after its replica was cut off, want within %s", repaired.Round(100*time.Millisecond), shardHandoff)
	}
	if got := rangesHeld(t, survivor); got != 2 {
		t.Errorf("cueop_shard_ranges_held{replica=%q} = %v, want 2", survivor, got)
	}
}

// rangesHeld is cueop_shard_ranges_held of replica id.
func rangesHeld(t *testing.T, id string) float64 {
	t.Helper()
	if v, ok := testkit.Metric(t, "cueop_shard_ranges_held", "replica", id); ok {
		return v
	}
	return -1
}

// TestShardedTemplateRemovalClearsEveryRange removes the WebApp template
// while replica a holds range 0 and range 1 is mid-handover (its Lease held
// by a replica that is gone): the ordered-deletion finalizer comes off
// every WebApp, those of range 1 too, so that none is stuck on deletion.
// Filtered by the API server and by the client alike.
func TestShardedTemplateRemovalClearsEveryRange(t *testing.T) {
	forEachFilter(t, testShardedTemplateRemovalClearsEveryRange)
}

func testShardedTemplateRemovalClearsEveryRange(t *testing.T, f shard.Filter) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t)
	now := metav1.NewMicroTime(time.Now())
	ghost := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: shard.Ranges(2)[1].LeaseName()},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone"), LeaseDurationSeconds: ptr.To[int32](600),
			AcquireTime: &now, RenewTime: &now},
	}
	if err := c.Create(t.Context(), ghost); err != nil {
		t.Fatal(err)
	}
	startShardReplica(t, dir, ns, "a", f, &statusWriters{writers: map[string]map[string]bool{}})
	watchUntil(t, 60*time.Second, leasesGVR, ns, func(objs map[string]*unstructured.Unstructured) string {
		if h := shardHolders(objs); h[0] != "a" || h[1] != "gone" {
			return fmt.Sprintf("shard Leases held by %v, want a and gone", h)
		}
		return ""
	})
	waitWebAppCRD(t)
	// WebApps left with the finalizer, as a previous holder of their range
	// would have, until both ranges have some.
	byRange := map[int][]string{}
	for i := 0; len(byRange[0]) == 0 || len(byRange[1]) == 0; i++ {
		name := fmt.Sprintf("w%d", i)
		mustKubectl(t, fmt.Sprintf("apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: %s, namespace: %s, finalizers: [%s]}\nspec: {settingsFrom: {name: settings}}\n",
			name, ns, wellknown.FinalizerOrdered), "apply", "-f", "-")
		r := shard.Of(string(object(t, c, webAppGVK, ns, name).GetUID()), 2)
		byRange[r.Index] = append(byRange[r.Index], name)
	}
	t.Logf("WebApps by range: %v", byRange)
	// The replica serves WebApp before its template goes: the CRD may be
	// Established by an earlier test's operator, and a template removed
	// before the first load is never served, so nothing would release.
	eventually(t, 60*time.Second, func() string {
		for _, n := range byRange[0] {
			conds, _, _ := unstructured.NestedSlice(object(t, c, webAppGVK, ns, n).Object, "status", "conditions")
			if len(conds) == 0 {
				return fmt.Sprintf("WebApp %s (range 0) has no status yet: replica a does not serve WebApp", n)
			}
		}
		return ""
	})

	testkit.Remove(t, dir, "webapp")
	eventually(t, 60*time.Second, func() string {
		for _, names := range byRange {
			for _, n := range names {
				if fins := object(t, c, webAppGVK, ns, n).GetFinalizers(); len(fins) > 0 {
					return fmt.Sprintf("WebApp %s (range %d) still has finalizers %v", n, shard.Of(string(object(t, c, webAppGVK, ns, n).GetUID()), 2).Index, fins)
				}
			}
		}
		return ""
	})
}
