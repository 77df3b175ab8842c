package operator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// startPaced runs an operator with a rollout budget and returns it, with
// what follows its activity.
func startPaced(t *testing.T, dir, ns string, maxInFlight int) (*operator.Operator, *operatortest.Activity) {
	t.Helper()
	op, act, _ := startPacedStoppable(t, dir, ns, maxInFlight)
	return op, act
}

// startPacedStoppable is startPaced that also returns a stop, which waits
// for the operator to end.
func startPacedStoppable(t *testing.T, dir, ns string, maxInFlight int) (*operator.Operator, *operatortest.Activity, func()) {
	t.Helper()
	opts := operatortest.Options(dir, ns)
	opts.RolloutMaxInFlight = maxInFlight
	cfg, act := operatortest.Observe(clustertest.Config(), &opts)
	op, err := operator.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return op, act, operatortest.Run(t, op)
}

// pacedFleet is a fleet of RedisClusters served by an operator with a
// rollout budget: the namespace, the templates directory (a copy, to
// edit), the operator, what follows its activity and an admin client.
type pacedFleet struct {
	ns, dir string
	op      *operator.Operator
	act     *operatortest.Activity
	c       client.Client
}

// startPacedFleet runs an operator with a rollout budget of maxInFlight on
// a copy of the project's templates, serving a new namespace, until the
// test ends; applies n RedisClusters of 1 replica named prefix00,
// prefix01, ... and waits until all are Ready.
func startPacedFleet(t *testing.T, maxInFlight int, prefix string, n int) pacedFleet {
	t.Helper()
	f := pacedFleet{ns: clustertest.Namespace(t), dir: copyTemplates(t)}
	f.op, f.act = startPaced(t, f.dir, f.ns, maxInFlight)
	f.c = newClient(t)
	waitCRD(t)
	applyRedis(t, f.ns, prefix, n, 1)
	eventually(t, 2*time.Minute, allReady(t, f.ns, n))
	return f
}

func applyRedis(t *testing.T, ns, prefix string, n, replicas int) {
	t.Helper()
	var docs []string
	for i := range n {
		docs = append(docs, redisYAML(ns, fmt.Sprintf("%s%02d", prefix, i), replicas, "7.0"))
	}
	mustKubectl(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
}

func allReady(t *testing.T, ns string, n int) func() string {
	c := newClient(t)
	return func() string {
		if ready, _, total := readyCount(t, c, ns, ""); ready != n {
			return fmt.Sprintf("%d of %d ready", ready, total)
		}
		return ""
	}
}

// watchProgress samples the operator's rollout state until stop is closed
// and returns the most CRs seen in flight at once.
func watchProgress(op *operator.Operator, stop <-chan struct{}) func() int {
	var mu sync.Mutex
	most := 0
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, p := range op.Progress() {
				mu.Lock()
				most = max(most, p.InFlight)
				mu.Unlock()
			}
		}
	}()
	return func() int { mu.Lock(); defer mu.Unlock(); return most }
}

func TestRolloutIsPaced(t *testing.T) {
	const n = 20
	f := startPacedFleet(t, 4, "p", n)
	ns, dir, op, c := f.ns, f.dir, f.op, f.c
	old := getCR(t, c, ns, "p00")
	oldRev, _, _ := unstructured.NestedString(old.Object, "status", "revision")

	stop := make(chan struct{})
	most := watchProgress(op, stop)
	editTemplate(t, dir, addPodLabel("paced"))
	eventually(t, 2*time.Minute, func() string {
		if why := podsLabelledAll(t, ns, "tier", "paced", n); why != "" {
			return why
		}
		_, atRev, _ := readyCount(t, c, ns, redisProgress(t, op).Revision)
		if atRev != n {
			return fmt.Sprintf("%d of %d CRs converged to the new revision", atRev, n)
		}
		return ""
	})
	close(stop)
	if m := most(); m > 4 || m == 0 {
		t.Errorf("at most %d CRs were in flight, want between 1 and the budget of 4", m)
	}
	if newRev := redisProgress(t, op).Revision; newRev == oldRev {
		t.Errorf("revision did not change: %s", newRev)
	}
	if ready, _, _ := readyCount(t, c, ns, ""); ready != n {
		t.Errorf("%d of %d ready after the rollout", ready, n)
	}
}

func podsLabelledAll(t *testing.T, ns, key, value string, want int) string {
	c := newClient(t)
	n := 0
	for _, p := range listAllPods(t, c, ns) {
		if p.GetLabels()[key] == value {
			n++
		}
	}
	if n != want {
		return fmt.Sprintf("%d of %d pods have %s=%s", n, want, key, value)
	}
	return ""
}

// TestBadRevisionHalts rolls out a template the API server refuses (an
// invalid label value): the first CRs moved stall, the rollout halts, the
// others stay Ready on the previous revision, and fixing the template
// resumes the rollout.
func TestBadRevisionHalts(t *testing.T) {
	const n = 12
	f := startPacedFleet(t, 3, "h", n)
	ns, dir, op, act, c := f.ns, f.dir, f.op, f.act, f.c
	good := redisProgress(t, op).Revision

	// A label the API server refuses for these CRs, valid for the CR the
	// admission builds from the schema (default/sample): a revision the
	// admission cannot tell bad, as one depending on the CRs' data is.
	editTemplate(t, dir, func(src string) string {
		return strings.Replace(src, `metadata: {name: "\(_name)-\(i)", labels: _selector}`,
			`metadata: {name: "\(_name)-\(i)", labels: _selector & {`+badTier+`}}`, 1)
	})
	eventually(t, time.Minute, func() string {
		p := redisProgress(t, op)
		if !p.Halted || p.Revision == good {
			return fmt.Sprintf("rollout not halted: %+v", p)
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string { return crdEvent(t, c, "RolloutHalted", "halted") })
	// The halted rollout moves no other CR: the operator settles with the
	// others untouched. The bad label is refused at render (ChildRefused),
	// so a moved CR stalls with its status still at the good revision.
	act.Settled(t, 0, 2*time.Minute)
	ready, _, _ := readyCount(t, c, ns, good)
	if stalled := stalledCount(t, c, ns); ready != n-3 || stalled != 3 {
		t.Errorf("after the halt: %d ready, %d stalled; want the %d CRs not moved ready and 3 stalled", ready, stalled, n-3)
	}

	fixBadLabel(t, dir, ns, n)
	if p := redisProgress(t, op); p.Halted {
		t.Errorf("rollout still halted after the fix: %+v", p)
	}
}

// badTier is a Pod label valid in namespace default only.
const badTier = `tier: [if parent.metadata.namespace == "default" {"ok"}, "not a valid label value!"][0]`

// stalledCount counts the RedisClusters of ns that are Stalled.
func stalledCount(t *testing.T, c client.Client, ns string) int {
	list, err := listRedis(c, ns)
	must(t, err)
	n := 0
	for i := range list {
		if conditionStatus(&list[i], "Stalled") == "True" {
			n++
		}
	}
	return n
}

// fixBadLabel fixes the label addPodLabel("not a valid label value!")
// broke, and waits until the n CRs of ns converged on the fixed revision.
func fixBadLabel(t *testing.T, dir, ns string, n int) {
	t.Helper()
	editTemplate(t, dir, func(s string) string {
		s = strings.Replace(s, badTier, `tier: "fixed"`, 1)
		return strings.Replace(s, `tier: "not a valid label value!"`, `tier: "fixed"`, 1)
	})
	eventually(t, 2*time.Minute, func() string {
		if why := podsLabelledAll(t, ns, "tier", "fixed", n); why != "" {
			return why
		}
		return allReady(t, ns, n)()
	})
}

func redisProgress(t *testing.T, op *operator.Operator) operator.KindProgress {
	t.Helper()
	p, ok := kindProgress(op, "RedisCluster")
	if !ok {
		t.Fatal("RedisCluster is not served")
	}
	return p
}

// kindProgress is the rollout progress of kind, if op serves it yet.
func kindProgress(op *operator.Operator, kind string) (operator.KindProgress, bool) {
	for _, p := range op.Progress() {
		if p.Kind == kind {
			return p, true
		}
	}
	return operator.KindProgress{}, false
}

// TestRestartMidRolloutStaysPaced edits the template into a bad revision
// while the operator is down. The new process never served the CRs'
// revision, so it cannot render waiting CRs with it: it moves them within
// the budget, halts after 3 stalled, and leaves the others untouched and
// Ready until a fixed template resumes the rollout.
func TestRestartMidRolloutStaysPaced(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	stop := operatortest.Start(t, clustertest.Config(), operatortest.Options(dir, ns))
	c := newClient(t)
	waitCRD(t)
	const n = 12
	applyRedis(t, ns, "rs", n, 1)
	eventually(t, 2*time.Minute, allReady(t, ns, n))
	stop()

	editTemplate(t, dir, addPodLabel("not a valid label value!"))
	op, act := startPaced(t, dir, ns, 4)
	eventually(t, time.Minute, func() string {
		if p, ok := kindProgress(op, "RedisCluster"); !ok || !p.Halted {
			return fmt.Sprintf("rollout not halted: %+v", op.Progress())
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	bad := redisProgress(t, op).Revision
	list, err := listRedis(c, ns)
	must(t, err)
	moved := 0
	for i := range list {
		cr := &list[i]
		if rev, _, _ := unstructured.NestedString(cr.Object, "status", "revision"); rev == bad || conditionStatus(cr, "Stalled") == "True" {
			moved++
		} else if ready := conditionStatus(cr, "Ready"); ready != "True" {
			t.Errorf("%s, not moved, is Ready=%s", cr.GetName(), ready)
		}
	}
	if moved < 3 || moved > 4 {
		t.Errorf("%d CRs moved to the bad revision after the restart, want 3 or 4 (budget 4, halt after 3)", moved)
	}

	fixBadLabel(t, dir, ns, n)
}

// readyCount counts the CRs of ns whose Ready condition is True and the
// CRs at revision rev (any revision when rev is "").
func readyCount(t *testing.T, c client.Client, ns, rev string) (ready, atRev, total int) {
	list, err := listRedis(c, ns)
	if err != nil {
		t.Error(err)
		return 0, 0, 0
	}
	for i := range list {
		cr := &list[i]
		if conditionStatus(cr, "Ready") == "True" {
			ready++
		}
		if r, _, _ := unstructured.NestedString(cr.Object, "status", "revision"); rev == "" || r == rev {
			if conditionStatus(cr, "Reconciling") == "False" {
				atRev++
			}
		}
	}
	return ready, atRev, len(list)
}

// listRedis lists the RedisClusters of ns.
func listRedis(c client.Client, ns string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(redisGVK.GroupVersion().WithKind("RedisClusterList"))
	err := c.List(context.Background(), list, client.InNamespace(ns))
	return list.Items, err
}

// TestTemplateEditKeepsEveryCRReady edits the template under 100 ready CRs
// (a label on every Pod, applied in place) and samples the Ready count
// throughout the rollout: it must never drop.
func TestTemplateEditKeepsEveryCRReady(t *testing.T) {
	ns, dir, c := serveRedis(t)
	const n = 100
	var docs []string
	for i := range n {
		docs = append(docs, redisYAML(ns, fmt.Sprintf("r%03d", i), 3, "7.0"))
	}
	start := time.Now()
	mustKubectl(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
	eventually(t, 5*time.Minute, func() string {
		if ready, _, total := readyCount(t, c, ns, ""); ready != n {
			return fmt.Sprintf("%d of %d ready", ready, total)
		}
		return ""
	})
	t.Logf("%d RedisClusters (3 Pods each) Ready in %s", n, time.Since(start).Round(100*time.Millisecond))

	editTemplate(t, dir, addPodLabel("rollout"))
	minReady := n
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ready, _, _ := readyCount(t, c, ns, "")
			mu.Lock()
			minReady = min(minReady, ready)
			mu.Unlock()
		}
	}()
	start = time.Now()
	eventually(t, 5*time.Minute, func() string {
		pods := listAllPods(t, c, ns)
		labelled := 0
		for _, p := range pods {
			if p.GetLabels()["tier"] == "rollout" {
				labelled++
			}
		}
		if labelled != 3*n {
			return fmt.Sprintf("%d of %d pods relabelled", labelled, 3*n)
		}
		return ""
	})
	rollout := time.Since(start)
	close(stop)
	<-done
	t.Logf("template edit: %d pods relabelled in %s; minimum Ready count during the rollout: %d of %d", 3*n, rollout.Round(100*time.Millisecond), minReady, n)
	if minReady != n {
		t.Errorf("Ready count fell to %d of %d during a template edit that keeps every Pod ready", minReady, n)
	}
}

func listAllPods(t *testing.T, c client.Client, ns string) []unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
