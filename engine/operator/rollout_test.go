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
)

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
