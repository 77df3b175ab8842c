package operator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestChainedEditsStayPaced edits the template A to B, then B to C while B
// rolls out. The CRs still on A must wait on A for their turn, not all move
// to B at once when C becomes current, and the budget holds throughout. The
// edits label the Pods tier=b and tier=c, and a watch on the Pods records
// every Pod that ever carried tier=b. B also never reports Ready (so the
// CRs moved to it never converge and its rollout stays at the budget
// until C replaces it), as a revision waiting on slow children would.
func TestChainedEditsStayPaced(t *testing.T) {
	const budget, n = 2, 12
	f := startPacedFleet(t, budget, "ch", n)
	ns, dir, op, c := f.ns, f.dir, f.op, f.c
	revA := redisProgress(t, op).Revision

	everB := watchPodLabel(t, ns, "tier", "b")
	stop := make(chan struct{})
	most := watchProgress(op, stop)

	editTemplate(t, dir, func(s string) string { return notReady(addPodLabel("b")(s)) })
	var revB string
	eventually(t, time.Minute, func() string {
		if revB = redisProgress(t, op).Revision; revB == revA {
			return "revision B not served yet"
		}
		return ""
	})
	editTemplate(t, dir, func(s string) string {
		return strings.Replace(strings.Replace(s, `tier: "b"`, `tier: "c"`, 1), notReadyLine, readyLine, 1)
	})
	eventually(t, time.Minute, func() string {
		if redisProgress(t, op).Revision == revB {
			return "revision C not served yet"
		}
		return ""
	})
	// Pods on B now; at most the budget's worth of CRs were still in
	// flight to B when C became current (no CR converges on B).
	onB := 0
	for _, p := range listAllPods(t, c, ns) {
		if p.GetLabels()["tier"] == "b" {
			onB++
		}
	}
	eventually(t, 3*time.Minute, func() string {
		if why := podsLabelledAll(t, ns, "tier", "c", n); why != "" {
			return why
		}
		return allReady(t, ns, n)()
	})
	close(stop)
	t.Logf("Pods on B when C became current: %d; ever on B: %d; most in flight: %d", onB, everB(), most())
	if m := most(); m > budget {
		t.Errorf("%d CRs were in flight at once, want at most the budget of %d", m, budget)
	}
	if onB > budget {
		t.Errorf("%d Pods on B when C became current, want at most the budget of %d (B never converges)", onB, budget)
	}
	if got := everB(); got > onB+budget {
		t.Errorf("%d Pods were ever labelled by revision B, but only %d were when C became current (budget %d): CRs on A moved to B after C replaced it", got, onB, budget)
	}
}

const (
	readyLine    = "ready: status.readyReplicas >= _minReady"
	notReadyLine = "ready: false"
)

// notReady makes the RedisCluster template never report Ready.
func notReady(src string) string { return strings.Replace(src, readyLine, notReadyLine, 1) }

// watchPodLabel watches the Pods of ns until the test ends and returns how
// many distinct Pods were seen with label key=value.
func watchPodLabel(t *testing.T, ns, key, value string) func() int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Labels[key] != value {
				continue
			}
			mu.Lock()
			seen[p.Name] = true
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
}
