package operator_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestReferenceCacheHoldsMetadataOnly: once a template references
// ConfigMaps, the operator watches every ConfigMap it serves, but holds
// only their metadata: ConfigMaps of 1 MB each that no template reads
// (100 here; $CUEOP_TEST_BIG_CONFIGMAPS for more) grow the operator's live
// heap by far less than their data (an eighth at most; about 1 KiB each
// measured). A large one labelled into a selector is read whole for the
// render that needs it.
func TestReferenceCacheHoldsMetadataOnly(t *testing.T) {
	ns := clustertest.Namespace(t)
	names := startDigest(t, ns)
	names("") // the ConfigMaps are watched
	n := 100
	if v, err := strconv.Atoi(os.Getenv("CUEOP_TEST_BIG_CONFIGMAPS")); err == nil && v > 0 {
		n = v
	}
	const size = 1_000_000
	before, rssBefore := liveHeap(), rss(t)
	c := newClient(t)
	blob := strings.Repeat("x", size)
	for i := range n {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("big-%d", i), "namespace": ns},
			"data":     map[string]any{"blob": blob}}}
		must(t, c.Create(context.Background(), cm))
	}
	// Created after them, a labelled ConfigMap reaches the render only once
	// the watch delivered every big one.
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: "+ns+", labels: {digest: d}}\n", "apply", "-f", "-")
	names("a")
	after, rssAfter := liveHeap(), rss(t)
	growth, data := int64(after)-int64(before), int64(n)*size
	t.Logf("%d ConfigMaps of %d bytes in the served namespace, none read: live heap %.1f MiB before, %.1f MiB after (%+.1f MiB, %.0f bytes a ConfigMap); test process RSS %.1f MiB before, %.1f MiB after",
		n, size, mib(before), mib(after), float64(growth)/(1<<20), float64(growth)/float64(n), mib(rssBefore), mib(rssAfter))
	if growth > data/8 {
		t.Errorf("the live heap grew by %.1f MiB for %d ConfigMaps no template reads (%.0f MiB of data): their data is cached", float64(growth)/(1<<20), n, float64(data)/(1<<20))
	}

	mustKubectl(t, "", "-n", ns, "label", "configmap", "big-0", "digest=d")
	names("a,big-0")
}

// liveHeap is the bytes the heap holds after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rss is the resident memory of the test process (the operator runs in it),
// from /proc.
func rss(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * uint64(os.Getpagesize())
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
