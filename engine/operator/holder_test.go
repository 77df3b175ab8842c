package operator_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// crdAnnotations are the annotations and resourceVersion of the CRD name.
func crdAnnotations(t *testing.T, name string) (map[string]string, string) {
	t.Helper()
	out, err := kubectl(t, "", "get", "crd", name, "-o", "json")
	if err != nil {
		return nil, ""
	}
	u := &unstructured.Unstructured{}
	must(t, u.UnmarshalJSON([]byte(out)))
	return u.GetAnnotations(), u.GetResourceVersion()
}

// templateSource is the status.source.ref of the RedisCluster's Template.
func templateSource(t *testing.T) string {
	t.Helper()
	_, _, obj := templateCondition(t, "Ready")
	if obj == nil {
		return ""
	}
	ref, _, _ := unstructured.NestedString(obj.Object, "status", "source", "ref")
	return ref
}

// TestKindHeldByAnotherOperator: two installs of cueop (instances
// team-a/cueop and team-b/cueop) on one cluster, each with its own copy of
// the templates. A holds RedisCluster: its CRD names A. B, loading a
// package of the same name, neither serves RedisCluster nor writes its CRD
// or its Template, says so in its log, and serves its own kind; the
// RedisCluster's Template stays A's. Once B is told to take RedisCluster
// over (--take-over), the CRD names B, B reconciles the RedisClusters of
// its namespace and writes the Template, and A, seeing the CRD change,
// stops serving the kind without writing its CRD back.
func TestKindHeldByAnotherOperator(t *testing.T) {
	const widgetCRD = "widgets.evil.example.com"
	t.Cleanup(func() { // registered first, run last: after the operators stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate, "template/"+widgetCRD)
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+redisCRD, "crd/"+widgetCRD)
	})
	// The RedisCluster CRD an earlier test left names the instance that
	// applied it (the default one): A, another instance, would not take it.
	mustKubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+redisCRD)
	c := newClient(t)
	nsA, nsB := clustertest.Namespace(t), clustertest.Namespace(t)
	dirA := copyTemplates(t)
	optsA := operatortest.Options(dirA, nsA)
	optsA.Instance = "team-a/cueop"
	a, _ := operatortest.StartObserved(t, clustertest.Config(), optsA)
	waitCRD(t)
	eventually(t, 60*time.Second, func() string {
		if ann, _ := crdAnnotations(t, redisCRD); ann[wellknown.AnnotationOperator] != "team-a/cueop" {
			return fmt.Sprintf("CRD %s annotations %v, want %s: team-a/cueop", redisCRD, ann, wellknown.AnnotationOperator)
		}
		return ""
	})
	mustKubectl(t, redisYAML(nsA, "a", 1, "7.0"), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return readyStatus(t, c, nsA, "a", 1) })
	absA, _ := filepath.Abs(dirA)
	eventually(t, 60*time.Second, func() string {
		if got := templateSource(t); got != absA {
			return fmt.Sprintf("Template's source %q, want A's %q", got, absA)
		}
		return ""
	})
	_, rvA := crdAnnotations(t, redisCRD)

	dirB := copyTemplates(t)
	widget := filepath.Join(dirB, "widget", "widget.cue")
	must(t, os.MkdirAll(filepath.Dir(widget), 0o755))
	must(t, os.WriteFile(widget, []byte(widgetPackage), 0o644))
	optsB := operatortest.Options(dirB, nsB)
	optsB.Instance = "team-b/cueop"
	b, stopB := operatortest.StartObserved(t, clustertest.Config(), optsB)
	b.WaitLog(t, 90*time.Second, "serving kind", "package", "widget")
	line := b.WaitLog(t, 60*time.Second, "kind not served: another operator holds it", "kind", "RedisCluster.cache.example.com")
	if line.Values["holder"] != "team-a/cueop" {
		t.Errorf("B's log names the holder %q, want team-a/cueop: %v", line.Values["holder"], line.Values)
	}
	if got := b.Operator.HeldElsewhere()["rediscluster"]; got != "team-a/cueop" {
		t.Errorf("B's kinds held elsewhere: %v, want rediscluster: team-a/cueop", b.Operator.HeldElsewhere())
	}
	if ann, _ := crdAnnotations(t, widgetCRD); ann[wellknown.AnnotationOperator] != "team-b/cueop" {
		t.Errorf("CRD %s annotations %v, want %s: team-b/cueop", widgetCRD, ann, wellknown.AnnotationOperator)
	}
	mustKubectl(t, redisYAML(nsB, "b", 1, "7.0"), "apply", "-f", "-")
	b.Settled(t, 0, 2*time.Minute)
	if pods := listPods(t, c, nsB, "b"); len(pods) != 0 {
		t.Errorf("B reconciled a RedisCluster, a kind A holds: %d Pods", len(pods))
	}
	if ann, rv := crdAnnotations(t, redisCRD); rv != rvA || ann[wellknown.AnnotationOperator] != "team-a/cueop" {
		t.Errorf("B wrote A's CRD: resourceVersion %s (was %s), annotations %v", rv, rvA, ann)
	}
	if got := templateSource(t); got != absA {
		t.Errorf("Template's source %q, want A's %q: B wrote it", got, absA)
	}

	// The administrator moves RedisCluster to B.
	stopB()
	optsB.TakeOver = []string{"RedisCluster.cache.example.com"}
	b, _ = operatortest.StartObserved(t, clustertest.Config(), optsB)
	b.WaitLog(t, 60*time.Second, "taking the kind over from another operator", "kind", "RedisCluster.cache.example.com", "from", "team-a/cueop")
	eventually(t, 90*time.Second, func() string { return readyStatus(t, c, nsB, "b", 1) })
	if ann, _ := crdAnnotations(t, redisCRD); ann[wellknown.AnnotationOperator] != "team-b/cueop" {
		t.Errorf("CRD %s annotations %v after the take-over, want %s: team-b/cueop", redisCRD, ann, wellknown.AnnotationOperator)
	}
	absB, _ := filepath.Abs(dirB)
	eventually(t, 60*time.Second, func() string {
		if got := templateSource(t); got != absB {
			return fmt.Sprintf("Template's source %q, want B's %q", got, absB)
		}
		return ""
	})

	// A sees its kind's CRD taken (watchHolders), with no edit of its
	// templates: it stops serving it and leaves its CRD (before: only at
	// its next reload, which a static directory may never make).
	a.WaitLog(t, 60*time.Second, "kind not served: another operator holds it", "kind", "RedisCluster.cache.example.com", "holder", "team-b/cueop")
	a.WaitLog(t, 60*time.Second, "kind removed: controller stopped", "package", "rediscluster")
	if ann, _ := crdAnnotations(t, redisCRD); ann[wellknown.AnnotationOperator] != "team-b/cueop" {
		t.Errorf("CRD %s annotations %v after A's reload, want %s: team-b/cueop", redisCRD, ann, wellknown.AnnotationOperator)
	}
	if got := templateSource(t); got != absB {
		t.Errorf("Template's source %q after A's reload, want B's %q", got, absB)
	}
}
