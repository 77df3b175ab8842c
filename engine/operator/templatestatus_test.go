package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/internal/testkit"
)

const redisTemplate = "template/" + redisCRD

// templateCondition is the status and message of the condition typ of
// the RedisCluster's Template object, read with kubectl.
func templateCondition(t *testing.T, typ string) (status, message string, obj *unstructured.Unstructured) {
	t.Helper()
	return kubectlCondition(t, redisTemplate, typ)
}

// TestTemplateObjectShowsLoadState: each kind's Template object says it
// serves, with its revision and storage version, and kubectl waits on it;
// a broken edit shows within seconds as Degraded with the CUE position
// while the last good revision keeps serving; the fix clears it.
func TestTemplateObjectShowsLoadState(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	_, dir := startRedisFleet(t)
	eventually(t, 60*time.Second, func() string { // the operator installs the Template CRD, then writes
		if out, err := kubectl(t, "", "get", redisTemplate); err != nil {
			return out
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string { // written by this test's operator, not an earlier one
		s, msg, obj := templateCondition(t, "Ready")
		if s != "True" {
			return fmt.Sprintf("Ready %s: %s (%v)", s, msg, obj)
		}
		if ref, _, _ := unstructured.NestedString(obj.Object, "status", "source", "ref"); ref != dir {
			return fmt.Sprintf("source %q, want %q", ref, dir)
		}
		return ""
	})
	mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=60s", redisTemplate)
	_, _, obj := templateCondition(t, "Ready")
	rev, _, _ := unstructured.NestedString(obj.Object, "status", "revision")
	storage, _, _ := unstructured.NestedString(obj.Object, "status", "storageVersion")
	if rev == "" || storage == "" {
		t.Fatalf("status without revision or storage version: %v", obj.Object["status"])
	}
	if out := mustKubectl(t, "", "get", "templates"); !strings.Contains(out, redisCRD) || !strings.Contains(out, rev) {
		t.Fatalf("kubectl get templates does not show %s at %s:\n%s", redisCRD, rev, out)
	}
	good := testkit.Read(t, dir, "rediscluster/rediscluster.cue")
	testkit.Write(t, dir, map[string]string{"rediscluster/rediscluster.cue": good + "\nbroken: 1 & 2\n"})
	eventually(t, 60*time.Second, func() string {
		s, msg, _ := templateCondition(t, "Degraded")
		if s != "True" || !strings.Contains(msg, "rediscluster.cue:") {
			return "Degraded " + s + ": " + msg
		}
		return ""
	})
	if s, msg, _ := templateCondition(t, "Ready"); s != "True" {
		t.Fatalf("the last good revision serves, yet Ready is %s: %s", s, msg)
	}
	testkit.Write(t, dir, map[string]string{"rediscluster/rediscluster.cue": good})
	eventually(t, 60*time.Second, func() string {
		if s, msg, _ := templateCondition(t, "Degraded"); s != "False" {
			return "Degraded " + s + ": " + msg
		}
		return ""
	})
}
