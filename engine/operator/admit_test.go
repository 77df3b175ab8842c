package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/internal/testkit"
)

// TestHotReloadAdmission: a hot reload of a template whose Pod child
// misspells `containers` is refused as `cueop vet` refuses it: the
// Template says AdmissionRefused with the field and its CUE position, the
// last good revision keeps serving the CR, which stays Ready, and the fix
// serves.
func TestHotReloadAdmission(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	ns, dir := startRedisFleet(t)
	mustKubectl(t, "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: r, namespace: "+ns+"}\nspec: {replicas: 1}\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "redisclusters.cache.example.com/r", "--timeout=90s")
	mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=60s", redisTemplate)
	_, _, obj := templateCondition(t, "Ready")
	served := obj.Object["status"].(map[string]any)["revision"]

	good := testkit.Read(t, dir, "rediscluster/rediscluster.cue")
	bad := strings.Replace(good, "containers: [{", "containerz: [{", 1)
	if bad == good {
		t.Fatal("no `containers: [{` in the RedisCluster template")
	}
	testkit.Write(t, dir, map[string]string{"rediscluster/rediscluster.cue": bad})
	eventually(t, 60*time.Second, func() string {
		s, msg, obj := templateCondition(t, "Degraded")
		c := conditionOf(obj, "Degraded")
		if s != "True" || c["reason"] != "AdmissionRefused" || !strings.Contains(msg, "containerz") || !strings.Contains(msg, "rediscluster.cue:") {
			return "Degraded " + s + ": " + msg
		}
		return ""
	})
	_, _, obj = templateCondition(t, "Ready")
	if rev := obj.Object["status"].(map[string]any)["revision"]; rev != served {
		t.Fatalf("the Template says revision %v serves, want %v (the last good one)", rev, served)
	}
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "redisclusters.cache.example.com/r", "--timeout=10s")

	testkit.Write(t, dir, map[string]string{"rediscluster/rediscluster.cue": good})
	eventually(t, 60*time.Second, func() string {
		if s, msg, _ := templateCondition(t, "Degraded"); s != "False" {
			return "Degraded " + s + ": " + msg
		}
		return ""
	})
}
