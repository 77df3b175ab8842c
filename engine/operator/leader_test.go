package operator_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The leader election timing of the test's operators: a lease short enough
// for a quick handover, and a renew deadline that leaves the leader several
// renew attempts (one per retry period) before it gives up, so that a leader
// slowed down by a loaded machine keeps its lease.
const (
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = time.Second
)

// startLeader runs an operator with leader election; its stop kills it
// without releasing the lease, as a crash would.
func startLeader(t *testing.T, dir, ns string) (stop func()) {
	t.Helper()
	return startLeaderWith(t, operator.Options{Templates: dir, InstallCRDs: true, Namespace: ns})
}

// startLeaderWith is startLeader with opts (their Manager options are the
// leader election's).
func startLeaderWith(t *testing.T, opts operator.Options) (stop func()) {
	t.Helper()
	renew, retry := renewDeadline, retryPeriod
	lease := leaseDuration
	opts.Manager = ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: opts.Namespace, LeaderElectionID: "cueop-leader",
		LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
	}
	op, err := operator.New(clustertest.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = op.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func holder(t *testing.T, c client.Client, ns string) string {
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cueop-leader"}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func TestLeaderElectionHandsOver(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t)
	stopFirst := startLeader(t, dir, ns)
	var first string
	eventually(t, 60*time.Second, func() string {
		if first = holder(t, c, ns); first == "" {
			return "no leader"
		}
		return ""
	})
	startLeader(t, dir, ns)
	waitCRD(t)
	readyRedis(t, c, ns, "led", 1)
	if h := holder(t, c, ns); h != first {
		t.Fatalf("leader changed from %s to %s while the first ran", first, h)
	}

	stopFirst()
	killed := time.Now()
	eventually(t, 2*time.Minute, func() string {
		if h := holder(t, c, ns); h == first || h == "" {
			return "lease still held by the killed leader"
		}
		return ""
	})
	handover := time.Since(killed)
	// kubectl scales at v2 (the preferred version), through the conversion
	// webhook; each test replica serves its own on 127.0.0.1 and the CRD
	// points at the leader's once it installed it (in a cluster, one
	// Service fronts every replica).
	eventually(t, 60*time.Second, func() string {
		if out, err := kubectl(t, "", "-n", ns, "scale", "rediscluster/led", "--replicas=2"); err != nil {
			return out
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "led", 2) })
	t.Logf("leadership handed over %s after the leader was killed (lease %s)", handover.Round(100*time.Millisecond), leaseDuration)
	// The standby takes the lease once it expires, at its next attempt: a
	// lease duration and a retry period after the last renewal. The bound
	// leaves a loaded machine 20 s more; a standby that never tried again
	// would not take over at all.
	if limit := leaseDuration + retryPeriod + 20*time.Second; handover > limit {
		t.Errorf("handover took %s, want within %s (lease %s, retry period %s)", handover.Round(100*time.Millisecond), limit, leaseDuration, retryPeriod)
	}
}
