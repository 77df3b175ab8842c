package operator_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// stalled says why the CR is not Stalled with reason and a message holding
// every part, or "".
func stalled(t *testing.T, c client.Client, ns, name, reason string, parts ...string) string {
	return stalledCR(getCR(t, c, ns, name), reason, parts...)
}

// stalledCR says why cr is not Stalled with reason and a message holding
// every part, or "".
func stalledCR(cr *unstructured.Unstructured, reason string, parts ...string) string {
	cond := conditionOf(cr, "Stalled")
	if cond == nil || cond["status"] != "True" || cond["reason"] != reason {
		return fmt.Sprintf("Stalled = %v", cond)
	}
	for _, p := range parts {
		if !strings.Contains(fmt.Sprint(cond["message"]), p) {
			return fmt.Sprintf("Stalled message %q lacks %q", cond["message"], p)
		}
	}
	if conditionStatus(cr, "Ready") != "False" {
		return "Ready is not False"
	}
	return ""
}

var conditionOf = testkit.Condition

func TestInvalidSpecStallsAndChangesNothing(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	// The CRD refuses minReady above replicas (a CEL rule generated from
	// #Spec); a bound by parent.spec.replicas is left to render, which is
	// what this test is about.
	editTemplate(t, dir, func(s string) string {
		return strings.Replace(s, "<=replicas\n", "<=parent.spec.replicas\n", 1)
	})
	startOperator(t, dir, ns, nil)
	// The shipped template adds the CEL rule back: with RedisClusters
	// stored, the schema guard would refuse it to the tests that follow.
	clustertest.DeleteCRDsAtEnd(t, redisCRD)
	c := newClient(t)
	waitCRD(t)
	cr := redisYAML(ns, "cross", 3, "7.0") + "  minReady: 5\n"
	// The CRD may still be the one another test installed, with the CEL
	// rule: the API server accepting the CR is the sign that this
	// operator's CRD is in force.
	eventually(t, 60*time.Second, func() string {
		if out, err := kubectl(t, cr, "apply", "-f", "-"); err != nil {
			return "CR refused (the CRD without the rule not in force yet): " + out
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		return stalled(t, c, ns, "cross", "InvalidSpec", "spec.minReady", "out of bound <=3", "rediscluster.cue:")
	})
	if pods := listPods(t, c, ns, "cross"); len(pods) != 0 {
		t.Fatalf("%d pods created for an invalid spec", len(pods))
	}
	out := mustKubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=cross")
	if !strings.Contains(out, "InvalidSpec") {
		t.Errorf("no InvalidSpec event:\n%s", out)
	}
	mustKubectl(t, "", "-n", ns, "patch", "rediscluster/cross", "--type=merge", "-p", `{"spec":{"minReady":2}}`)
	eventually(t, 60*time.Second, func() string {
		if conditionStatus(getCR(t, c, ns, "cross"), "Stalled") != "False" {
			return "still stalled"
		}
		return readyStatus(t, c, ns, "cross", 3)
	})
}

func TestRefusedChildStallsAndAppliesNothing(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	editTemplate(t, dir, func(s string) string {
		return strings.Replace(s, `kind:       "Service"
		metadata: {name: _name, labels: _selector}`, `kind:       "Service"
		metadata: {name: _name, namespace: "kube-system", labels: _selector}`, 1)
	})
	startOperator(t, dir, ns, nil)
	c := newClient(t)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "escape", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		return stalled(t, c, ns, "escape", "ChildRefused", "children.service", `namespace "kube-system" refused`)
	})
	if pods := listPods(t, c, ns, "escape"); len(pods) != 0 {
		t.Fatalf("%d pods applied although a sibling was refused", len(pods))
	}
}

// TestNoWritesOnResync restarts the operator over converged CRs: the new
// operator reconciles every one of them and must not write anything, nor
// render any (each CR's status records the digest of its inputs and
// children: reconcile/resync.go).
func TestNoWritesOnResync(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t)
	const n = 5
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("idle-%d", i))
	}
	opts := convergeThenStop(t, dir, ns, c, names...)
	rendered, checked := renders(t, "RedisCluster"), appliesUnchanged(t)
	cfg, ct := testkit.CountRequests(clustertest.Config())
	// The same conversion endpoint (address and CA) as the first process,
	// as a restarted Deployment keeps its Service and certificate Secret:
	// the CRD's clientConfig needs no write.
	act, _ := operatortest.StartObserved(t, cfg, opts)
	eventually(t, 60*time.Second, func() string {
		if got := act.ReconcilesOf("namespace", ns); got < n {
			return fmt.Sprintf("%d reconciles in %s, want %d (every CR)", got, ns, n)
		}
		return ""
	})
	act.Settled(t, 0, 60*time.Second)
	writes, reads := testkit.Strings(ct.Writes(0)), ct.Reads()
	if len(writes) != 0 {
		t.Fatalf("%d write requests during a resync of converged CRs: %v", len(writes), writes)
	}
	if got := renders(t, "RedisCluster") - rendered; got != 0 {
		t.Errorf("%v renders during a resync of %d converged CRs, want 0", got, n)
	}
	if got := appliesUnchanged(t) - checked; got != 0 {
		t.Errorf("%v children compared during a resync of %d converged CRs, want 0", got, n)
	}
	t.Logf("resync of %d converged CRs: 0 writes, %d reads (lists and watches)", n, reads)

	// Only the child kinds that have children are watched, not every
	// allowed kind; and the Templates, each kind's state (templatedrift.go),
	// and the CRDs' metadata, who holds each kind (holder.go).
	var watched []string
	for _, r := range ct.Where(testkit.Request.Watch) {
		watched = append(watched, r.Resource())
	}
	sort.Strings(watched)
	watched = slices.Compact(watched)
	want := []string{"blogs", "configmaps", "customresourcedefinitions", "pods", "redisclusters", "services", "staticsites", "templates", "webapps"}
	if !slices.Equal(watched, want) {
		t.Errorf("watched %v, want %v", watched, want)
	}
}

// convergeThenStop runs an operator on dir until RedisClusters of the
// given names, 3 replicas each, are Ready in ns, then stops it.
func convergeThenStop(t *testing.T, dir, ns string, c client.Client, names ...string) operator.Options {
	t.Helper()
	opts := operatortest.Options(dir, ns)
	_, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	defer stop()
	waitCRD(t)
	for _, name := range names {
		mustKubectl(t, redisYAML(ns, name, 3, "7.0"), "apply", "-f", "-")
	}
	for _, name := range names {
		eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, name, 3) })
	}
	return opts
}

// TestRestartRepairsWhatChangedWhileDown: a restarted operator skips the
// render of a CR only when its recorded inputs digest still holds (see
// TestNoWritesOnResync): a child edited, a child deleted and a spec changed
// while no operator ran are each converged after the restart.
func TestRestartRepairsWhatChangedWhileDown(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t)
	convergeThenStop(t, dir, ns, c, "edited", "deleted", "scaled", "kept")
	kept := getCR(t, c, ns, "kept")
	digest, _, _ := unstructured.NestedString(kept.Object, "status", "inputsDigest")
	if digest == "" {
		t.Fatalf("converged CR kept has no status.inputsDigest: %v", kept.Object["status"])
	}

	mustKubectl(t, "", "-n", ns, "patch", "configmap", "edited-config", "--type=merge", "-p", `{"data":{"redis.conf":"port 1\n"}}`)
	mustKubectl(t, "", "-n", ns, "delete", "pod", "deleted-1", "--wait=false")
	mustKubectl(t, redisYAML(ns, "scaled", 2, "7.0"), "apply", "-f", "-")
	startOperator(t, dir, ns, nil)
	eventually(t, 60*time.Second, func() string {
		if conf, err := clustertest.ConfigMapData(c, ns, "edited-config", "redis.conf"); err != nil {
			return err.Error()
		} else if !strings.Contains(conf, "port 6379") {
			return "redis.conf not restored: " + conf
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		if pods := listPods(t, c, ns, "deleted"); len(pods) != 3 {
			return fmt.Sprintf("CR deleted has %d Pods, want 3", len(pods))
		}
		return readyStatus(t, c, ns, "deleted", 3)
	})
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "scaled", 2) })
	after, _, _ := unstructured.NestedString(getCR(t, c, ns, "kept").Object, "status", "inputsDigest")
	if after != digest || getCR(t, c, ns, "kept").GetResourceVersion() != kept.GetResourceVersion() {
		t.Errorf("CR kept was written: inputsDigest %q, was %q", after, digest)
	}
}
