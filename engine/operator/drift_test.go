package operator_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestDriftIsRepairedAndForeignFieldsKept(t *testing.T) {
	ns, _, c := serveRedis(t)
	readyRedis(t, c, ns, "drift", 2)

	mustKubectl(t, "", "-n", ns, "label", "pod", "drift-0", "owner-team=payments")
	start := time.Now()
	mustKubectl(t, "", "-n", ns, "label", "pod", "drift-0", "app=hijacked", "--overwrite")
	eventually(t, 60*time.Second, func() string {
		pod := getPod(t, c, ns, "drift-0")
		if pod.GetLabels()["app"] != "redis" {
			return "app label still " + pod.GetLabels()["app"]
		}
		return ""
	})
	t.Logf("label drift repaired in %s", time.Since(start).Round(time.Millisecond))
	if got := getPod(t, c, ns, "drift-0").GetLabels()["owner-team"]; got != "payments" {
		t.Errorf("a label cueop does not set was changed: owner-team=%q", got)
	}

	mustKubectl(t, "", "-n", ns, "patch", "configmap", "drift-config", "--type=merge", "-p", `{"data":{"redis.conf":"port 1\n"}}`)
	eventually(t, 60*time.Second, func() string {
		if conf, err := clustertest.ConfigMapData(c, ns, "drift-config", "redis.conf"); err != nil {
			return err.Error()
		} else if !strings.Contains(conf, "port 6379") {
			return "redis.conf not restored: " + conf
		}
		return ""
	})
}

func getPod(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return clustertest.Get(t, c, podGVK, ns, name)
}

func TestImmutableChangeRecreatesOneAtATime(t *testing.T) {
	ns, dir, c := serveRedis(t)
	readyRedis(t, c, ns, "imm", 3)
	old := podUIDs(t, c, ns, "imm")

	editTemplate(t, dir, func(s string) string {
		return strings.Replace(s, `args: ["/etc/redis/redis.conf"]`, `args: ["/etc/redis/redis.conf", "--loglevel", "warning"]`, 1)
	})
	minPods := 3
	eventually(t, 90*time.Second, func() string {
		pods := listPods(t, c, ns, "imm")
		minPods = min(minPods, len(pods))
		n := 0
		for _, p := range pods {
			containers, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
			if args := fmt.Sprint(containers[0].(map[string]any)["args"]); strings.Contains(args, "warning") {
				n++
			}
		}
		if n != 3 || len(pods) != 3 {
			return fmt.Sprintf("%d of %d pods have the new args", n, len(pods))
		}
		return readyStatus(t, c, ns, "imm", 3)
	})
	if minPods < 2 {
		t.Errorf("%d pods left at one point: recreation must replace one pod at a time", minPods)
	}
	if now := podUIDs(t, c, ns, "imm"); now == old {
		t.Error("pods kept their UIDs: an immutable change needs a recreate")
	}
}

func TestKindsComeAndGo(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	staticsite := filepath.Join(t.TempDir(), "staticsite")
	must(t, os.Rename(filepath.Join(dir, "staticsite"), staticsite))
	act := startOperator(t, dir, ns, nil)
	c := newClient(t)
	waitCRD(t)

	// A new kind directory starts a controller and installs its CRD.
	must(t, os.Rename(staticsite, filepath.Join(dir, "staticsite")))
	eventually(t, 60*time.Second, func() string {
		if _, err := kubectl(t, "", "get", "crd", "staticsites.web.example.com"); err != nil {
			return "StaticSite CRD not installed"
		}
		return ""
	})
	mustKubectl(t, "apiVersion: web.example.com/v1\nkind: StaticSite\nmetadata:\n  name: site\n  namespace: "+ns+"\nspec:\n  replicas: 1\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "staticsite/site", "--timeout=120s")

	// A removed kind stops its controller; CRs and children stay.
	readyRedis(t, c, ns, "stay", 1)
	must(t, os.RemoveAll(filepath.Join(dir, "rediscluster")))
	act.WaitLog(t, 60*time.Second, "kind removed", "kind", "RedisCluster")
	before := act.ReconcilesOf("controller", "cueop-rediscluster")
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/stay", "--replicas=2")
	// A running controller would reconcile the scaled CR at once; the
	// operator settled (nothing done for operatortest.Quiet) means none did.
	act.Settled(t, 0, 60*time.Second)
	if n := act.ReconcilesOf("controller", "cueop-rediscluster") - before; n != 0 {
		t.Errorf("%d reconciles of RedisCluster after its kind was removed", n)
	}
	if pods := listPods(t, c, ns, "stay"); len(pods) != 1 {
		t.Errorf("%d pods after the kind was removed, want the 1 left untouched", len(pods))
	}
	cr := getCR(t, c, ns, "stay")
	if gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); gen != 1 || cr.GetGeneration() != 2 {
		t.Errorf("status.observedGeneration = %d at generation %d: a removed kind's CRs must be left alone", gen, cr.GetGeneration())
	}
}
