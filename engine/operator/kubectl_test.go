package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestKubectlAsUsersExpect drives a RedisCluster the way a user would:
// printer columns, short names, categories, explain from the CUE doc
// comments, and the scale subresource, at both served versions (kubectl
// prefers v2, read through the conversion webhook; v1 is the storage).
func TestKubectlAsUsersExpect(t *testing.T) {
	ns, _, c := serveRedis(t)
	readyRedis(t, c, ns, "ux", 2)

	for resource, want := range map[string]string{
		"redisclusters":                      "NAME SIZE READY PHASE AGE     ux 2 2 Running",
		"redisclusters.v2.cache.example.com": "NAME SIZE READY PHASE AGE     ux 2 2 Running",
		"redisclusters.v1.cache.example.com": "NAME REPLICAS READY PHASE AGE ux 2 2 Running",
	} {
		out := mustKubectl(t, "", "-n", ns, "get", resource)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got := strings.Join(strings.Fields(lines[0]), " ")
		if len(lines) == 2 {
			got += " " + strings.Join(strings.Fields(lines[1])[:4], " ")
		}
		if got != strings.Join(strings.Fields(want), " ") {
			t.Errorf("kubectl get %s = %q, want %q\n%s", resource, got, want, out)
		}
	}
	out := mustKubectl(t, "", "-n", ns, "get", "redisclusters")
	if !strings.Contains(out, "Running") {
		t.Errorf("kubectl get does not show the phase:\n%s", out)
	}
	for _, name := range []string{"redis", "rdc", "cueop"} {
		// eventually: the category may still name a CRD an earlier test
		// deleted, until the API server's discovery drops it
		eventually(t, 30*time.Second, func() string {
			if out, err := kubectl(t, "", "-n", ns, "get", name); err != nil || !strings.Contains(out, "ux") {
				return fmt.Sprintf("kubectl get %s does not list the RedisCluster: %v\n%s", name, err, out)
			}
			return ""
		})
	}
	out = mustKubectl(t, "", "explain", "rediscluster.spec.replicas", "--api-version=cache.example.com/v1")
	if !strings.Contains(out, "Number of Redis Pods, one per replica.") {
		t.Errorf("kubectl explain at v1 lacks the CUE doc comment:\n%s", out)
	}
	out = mustKubectl(t, "", "explain", "rediscluster.spec.size")
	if !strings.Contains(out, "Number of Redis Pods.") {
		t.Errorf("kubectl explain at v2 lacks the CUE doc comment:\n%s", out)
	}
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/ux", "--replicas=4") // v2: .spec.size
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "ux", 4) })
	mustKubectl(t, "", "-n", ns, "scale", "redisclusters.v1.cache.example.com/ux", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "ux", 3) })
	out = mustKubectl(t, "", "-n", ns, "get", "rediscluster", "ux", "-o", "jsonpath={.status.selector}")
	if out != "app=redis,cluster=ux" {
		t.Errorf("status.selector = %q", out)
	}
}
