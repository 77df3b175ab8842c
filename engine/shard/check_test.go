package shard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestCheckServerWithoutTheGate(t *testing.T) {
	t.Parallel()
	f, err := shard.CheckServer(t.Context(), clientset(t).CoordinationV1(), "default")
	if err != nil || f != shard.ByClient {
		t.Fatalf("CheckServer on an API server without the gate: %q, %v; want %q", f, err, shard.ByClient)
	}
}

// On an API server without the gate (this package's), Range.ListWatch
// keeps a range's informer to the range's objects, through the first list
// and the watch (adds and deletions), typed and unstructured alike.
func TestListWatchFiltersWithoutTheGate(t *testing.T) {
	ns := clustertest.Namespace(t)
	cs := clientset(t)
	dc, err := dynamic.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	create := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(0, 16)
	typed := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, o)
		},
	}
	res := dc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	untyped := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	dropped := droppedTotal(t)
	var stores []toolscache.Store
	var ranges []shard.Range
	for _, lw := range []toolscache.ListerWatcher{typed, untyped} {
		for _, r := range shard.Ranges(2) {
			inf := toolscache.NewSharedIndexInformer(r.ListWatch(lw), nil, 0, toolscache.Indexers{})
			ctx, cancel := context.WithCancel(t.Context())
			t.Cleanup(cancel)
			go inf.RunWithContext(ctx)
			stores, ranges = append(stores, inf.GetStore()), append(ranges, r)
		}
	}
	check := func() string {
		all, err := cms.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for i, st := range stores {
			var want, got []string
			for _, cm := range all.Items {
				if ranges[i].Contains(string(cm.UID)) {
					want = append(want, cm.Name)
				}
			}
			for _, o := range st.List() {
				m, err := meta.Accessor(o)
				if err != nil {
					return err.Error()
				}
				got = append(got, m.GetName())
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Sprintf("informer %d (range %s) holds %v, want %v", i, ranges[i], got, want)
			}
		}
		return ""
	}
	clustertest.Eventually(t, 30*time.Second, check)
	// Through the watch: 16 more, then half of them all deleted.
	create(16, 32)
	clustertest.Eventually(t, 30*time.Second, check)
	for i := 0; i < 32; i += 2 {
		if err := cms.Delete(t.Context(), fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.Eventually(t, 30*time.Second, check)
	if got := droppedTotal(t) - dropped; got < 32 {
		t.Errorf("cueop_shard_client_dropped_total grew by %v, want at least 32 (each informer got the other range's objects)", got)
	}
}

// droppedTotal is cueop_shard_client_dropped_total.
func droppedTotal(t *testing.T) float64 {
	t.Helper()
	return metricValue(t, "cueop_shard_client_dropped_total")
}

// metricValue is the value of the metric name whose labels hold labels.
func metricValue(t *testing.T, name string, kv ...string) float64 {
	t.Helper()
	if v, ok := testkit.Metric(t, name, kv...); ok {
		return v
	}
	return -1
}

// A sharded replica starts on an API server without the gate, filters on
// the client, and says so once in its log and in cueop_shard_filter.
func TestShardedReplicaFiltersWithoutTheGate(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	var mu sync.Mutex
	var said []string
	log := funcr.New(func(prefix, args string) {
		if strings.Contains(args, "sharding: ") {
			mu.Lock()
			said = append(said, args)
			mu.Unlock()
		}
	}, funcr.Options{})
	s, err := operator.NewSharded(clustertest.Config(), operator.Options{
		Templates: t.TempDir(),
		Manager: ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Logger: log},
	}, operator.Sharding{Shards: 2, Identity: "nogate", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	clustertest.Eventually(t, 60*time.Second, func() string {
		if n := len(s.Held()); n != 2 {
			return fmt.Sprintf("replica holds %d ranges, want 2", n)
		}
		return ""
	})
	if got := metricValue(t, "cueop_shard_filter", "replica", "nogate", "filter", "client"); got != 1 {
		t.Errorf(`cueop_shard_filter{replica="nogate",filter="client"} = %v, want 1`, got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run on an API server without the gate: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], "ignores shardSelector") || !strings.Contains(said[0], `"filter"="client"`) {
		t.Errorf("the replica said which filter it runs %d times, want once with filter client: %q", len(said), said)
	}
}
