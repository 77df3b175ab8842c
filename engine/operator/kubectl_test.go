package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestKubectlAsUsersExpect drives a RedisCluster the way a user would:
// printer columns, short names, categories, explain from the CUE doc
// comments, and the scale subresource.
func TestKubectlAsUsersExpect(t *testing.T) {
	ns := clustertest.Namespace(t)
	startOperator(t, copyTemplates(t), ns, nil)
	c := newClient(t)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "ux", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "ux", 2) })

	out := mustKubectl(t, "", "-n", ns, "get", "redisclusters")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if strings.Join(header, " ") != "NAME REPLICAS READY PHASE AGE" {
		t.Errorf("kubectl get columns = %v, want NAME REPLICAS READY PHASE AGE\n%s", header, out)
	}
	if !strings.Contains(out, "Running") {
		t.Errorf("kubectl get does not show the phase:\n%s", out)
	}
	for _, name := range []string{"redis", "rdc", "cueop"} {
		if out := mustKubectl(t, "", "-n", ns, "get", name); !strings.Contains(out, "ux") {
			t.Errorf("kubectl get %s does not list the RedisCluster:\n%s", name, out)
		}
	}
	out = mustKubectl(t, "", "explain", "rediscluster.spec.replicas")
	if !strings.Contains(out, "Number of Redis Pods, one per replica.") {
		t.Errorf("kubectl explain lacks the CUE doc comment:\n%s", out)
	}
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/ux", "--replicas=4")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "ux", 4) })
	out = mustKubectl(t, "", "-n", ns, "get", "rediscluster", "ux", "-o", "jsonpath={.status.selector}")
	if out != "app=redis,cluster=ux" {
		t.Errorf("status.selector = %q", out)
	}
}
