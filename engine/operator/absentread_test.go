package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// scaledTemplate's status reads a field no Deployment has (readyReplica),
// and its ready reads that status field.
const scaledTemplate = `package scaled

resource: {group: "absent.test.example", version: "v1", kind: "Scaled"}

#Spec: {replicas: *1 | int & >=1 & <=3}
#Status: {readyReplicas: int}

` + testkit.ParentObserved + `
children: deployment: {
	apiVersion: "apps/v1"
	kind:       "Deployment"
	metadata: name: parent.metadata.name
	spec: {
		replicas: parent.spec.replicas
		selector: matchLabels: app: parent.metadata.name
		template: {
			metadata: labels: app: parent.metadata.name
			spec: containers: [{name: "app", image: "nginx"}]
		}
	}
}
status: readyReplicas: *observed.deployment.status.readyReplica | 0
ready: status.readyReplicas == parent.spec.replicas
`

// TestAbsentReadNamedLive: a template whose status reads a field no
// Deployment has is warned about when the operator loads it, and once its
// Deployment is ready the CR is Ready=False with a reason and message that
// name the read, not ChildrenNotReady.
func TestAbsentReadNamedLive(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"scaled/scaled.cue": scaledTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "scaleds.absent.test.example", "--ignore-not-found") })
	act, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	defer stop()
	const read = "reads observed.deployment.status.readyReplica"
	line := act.WaitLog(t, time.Minute, "template warning", "kind", "Scaled")
	if w := line.Values["warning"]; !strings.Contains(w, "scaled.cue:27:25: status.readyReplicas "+read+", which Deployment apps/v1 does not have") {
		t.Errorf("load warning = %q, want the read of status.readyReplicas at its position", w)
	}
	clustertest.WaitEstablished(t, time.Minute, "scaleds.absent.test.example")
	mustKubectl(t, "apiVersion: absent.test.example/v1\nkind: Scaled\nmetadata: {name: s, namespace: "+ns+"}\nspec: {replicas: 1}\n", "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() string {
		if _, err := kubectl(t, "", "-n", ns, "wait", "--for=jsonpath={.status.readyReplicas}=1", "deployment/s", "--timeout=10s"); err != nil {
			return "Deployment s not ready: " + err.Error()
		}
		return ""
	})
	eventually(t, time.Minute, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "scaled/s", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="Ready")].reason}|{.status.conditions[?(@.type=="Ready")].message}`)
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(out, "False|ReadsAbsentField|ready "+read+" (through status), which Deployment apps/v1 does not have (") {
			return "Ready = " + out
		}
		return ""
	})
	mustKubectl(t, "", "-n", ns, "delete", "scaled/s", "--timeout=60s")
}

// TestAbsentReadWarnedOncePerReplica: a sharded replica holding both
// ranges of its kind logs the template's warnings once, not once per
// range it serves.
func TestAbsentReadWarnedOncePerReplica(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"scaled/scaled.cue": scaledTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "scaleds.absent.test.example", "--ignore-not-found") })
	opts := operatortest.Options(dir, ns)
	cfg, act := operatortest.Observe(clustertest.Config(), &opts)
	s, err := operator.NewSharded(cfg, opts, operator.Sharding{Shards: 2, Identity: "a", Namespace: ns,
		LeaseDuration: shardLease, RenewDeadline: shardRenew, RetryPeriod: shardRetry})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica: %v", err)
		}
	}()
	eventually(t, time.Minute, func() string {
		if n := len(act.Logged("serving kind", "kind", "Scaled")); n != 2 {
			return fmt.Sprintf("Scaled served by %d ranges, want 2", n)
		}
		return ""
	})
	if lines := act.Logged("template warning", "kind", "Scaled"); len(lines) != 1 {
		t.Errorf("%d template warnings logged, want 1: %v", len(lines), lines)
	}
}
