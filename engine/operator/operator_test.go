package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/internal/testkit"
)

// readyStatus says why the CR is not yet Ready with want ready replicas, or "".
func readyStatus(t *testing.T, c client.Client, ns, name string, want int64) string {
	cr := getCR(t, c, ns, name)
	ready, _, _ := unstructured.NestedInt64(cr.Object, "status", "readyReplicas")
	phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase")
	gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	if ready != want || phase != "Running" || gen != cr.GetGeneration() || conditionStatus(cr, "Ready") != "True" {
		return fmt.Sprintf("status = %v", cr.Object["status"])
	}
	return ""
}

var conditionStatus = testkit.ConditionStatus

func podImages(pods []unstructured.Unstructured) string {
	var out []string
	for _, p := range pods {
		containers, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
		out = append(out, p.GetName()+"="+fmt.Sprint(containers[0].(map[string]any)["image"]))
	}
	return strings.Join(out, ",")
}

func TestRedisClusterLifecycle(t *testing.T) {
	ns, _, c := serveRedis(t)
	readyRedis(t, c, ns, "demo", 3)
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "rediscluster/demo", "--timeout=60s")
	if pods := listPods(t, c, ns, "demo"); len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	svc := &unstructured.Unstructured{}
	svc.SetAPIVersion("v1")
	svc.SetKind("Service")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo"}, svc); err != nil {
		t.Fatalf("service: %v", err)
	}

	t.Run("scale up and down", func(t *testing.T) {
		mustKubectl(t, "", "-n", ns, "scale", "rediscluster/demo", "--replicas=5")
		eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "demo", 5) })
		mustKubectl(t, "", "-n", ns, "patch", "redisclusters.v1.cache.example.com/demo", "--type=merge", "-p", `{"spec":{"replicas":2}}`)
		eventually(t, 60*time.Second, func() string {
			if pods := listPods(t, c, ns, "demo"); len(pods) != 2 {
				return fmt.Sprintf("%d pods, want 2", len(pods))
			}
			return readyStatus(t, c, ns, "demo", 2)
		})
	})

	t.Run("version change", func(t *testing.T) {
		mustKubectl(t, "", "-n", ns, "patch", "redisclusters.v1.cache.example.com/demo", "--type=merge", "-p", `{"spec":{"version":"7.2"}}`)
		eventually(t, 60*time.Second, func() string {
			if imgs := podImages(listPods(t, c, ns, "demo")); imgs != "demo-0=redis:7.2,demo-1=redis:7.2" {
				return "images " + imgs
			}
			return readyStatus(t, c, ns, "demo", 2)
		})
	})

	t.Run("pod deleted by hand is restored", func(t *testing.T) {
		mustKubectl(t, "", "-n", ns, "delete", "pod", "demo-1", "--wait=false")
		eventually(t, 60*time.Second, func() string {
			for _, p := range listPods(t, c, ns, "demo") {
				if p.GetName() == "demo-1" {
					return readyStatus(t, c, ns, "demo", 2)
				}
			}
			return "demo-1 not restored"
		})
	})

	t.Run("invalid spec refused by the API server", func(t *testing.T) {
		out, err := kubectl(t, redisYAML(ns, "bad", 0, "7.0"), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.replicas") {
			t.Fatalf("kubectl apply replicas 0: err=%v out=%s; want a refusal naming spec.replicas", err, out)
		}
	})

	t.Run("deleting the CR garbage-collects the children", func(t *testing.T) {
		mustKubectl(t, "", "-n", ns, "delete", "rediscluster/demo")
		eventually(t, 60*time.Second, func() string {
			if pods := listPods(t, c, ns, "demo"); len(pods) != 0 {
				return fmt.Sprintf("%d pods left", len(pods))
			}
			return ""
		})
	})
}
