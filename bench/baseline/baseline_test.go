package baseline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/bench/baseline"
	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.SetLogger()
	clustertest.Main(m, localcluster.Options{})
}

// start runs the baseline on namespace ns until the returned stop is
// called, and returns what follows its activity.
func start(t *testing.T, cfg *rest.Config, ns string) (*operatortest.Activity, func()) {
	t.Helper()
	opts := baseline.ManagerOptions(ns)
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller.SkipNameValidation = ptrTo(true)
	cfg, act := operatortest.ObserveManager(cfg, &opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := baseline.Setup(mgr, 4); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return act, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// reconciles is the baseline's count of reconciles in this process.
func reconciles(t *testing.T) float64 {
	t.Helper()
	return testkit.MetricSum(t, "controller_runtime_reconcile_total")
}

func ptrTo[T any](v T) *T { return &v }

func newClient(t *testing.T) client.Client {
	t.Helper()
	opts := baseline.ManagerOptions("")
	c, err := client.New(clustertest.Config(), client.Options{Scheme: opts.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func converged(c client.Client, ns, name string, replicas int) string {
	rc := &baseline.RedisCluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rc); err != nil {
		return err.Error()
	}
	st := rc.Status
	if int(st.ReadyReplicas) != replicas || st.Phase != "Running" || st.ObservedGeneration != rc.Generation ||
		len(st.Conditions) != 1 || st.Conditions[0].Status != metav1.ConditionTrue {
		return fmt.Sprintf("%s: status %+v", name, st)
	}
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"cluster": name}); err != nil {
		return err.Error()
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	if n != replicas {
		return fmt.Sprintf("%s: %d pods, want %d", name, n, replicas)
	}
	return ""
}

// TestBaseline runs the baseline on a real control plane: it converges,
// scales down, repairs a label, and a restarted baseline writes nothing for
// converged CRs (the no-op rule the benchmark relies on).
func TestBaseline(t *testing.T) {
	ctx := context.Background()
	if err := harness.InstallCRD(ctx, clustertest.Config(), "../../templates"); err != nil {
		t.Fatal(err)
	}
	// The baseline serves no conversion webhook: the CRD's conversion is
	// None for it, as in the benchmark's baseline runs.
	crd, err := harness.CRDName("../../templates")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := harness.SetConversion(ctx, clustertest.Config(), crd, false); err != nil {
		t.Fatal(err)
	}
	if got := crdConversion(t, crd); got != "None" {
		t.Fatalf("conversion of %s after SetConversion(None): %s", crd, got)
	}
	ns := clustertest.Namespace(t)
	c := newClient(t)
	_, stop := start(t, clustertest.Config(), ns)
	for i, replicas := range []int32{2, 3} {
		rc := &baseline.RedisCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rc-%d", i), Namespace: ns},
			Spec: baseline.RedisClusterSpec{Replicas: replicas}}
		if err := c.Create(ctx, rc); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, func() string { return converged(c, ns, "rc-0", 2) })
	eventually(t, 60*time.Second, func() string { return converged(c, ns, "rc-1", 3) })

	rc := &baseline.RedisCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rc-1"}, rc); err != nil {
		t.Fatal(err)
	}
	rc.Spec.Replicas = 1
	if err := c.Update(ctx, rc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() string { return converged(c, ns, "rc-1", 1) })

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-0-0", Namespace: ns}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"hijacked"}}}`))
	if err := c.Patch(ctx, pod, patch, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() string {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err.Error()
		}
		if pod.Labels["app"] != "redis" {
			return "app label is " + pod.Labels["app"]
		}
		return ""
	})
	stop()

	cfg := clustertest.Config()
	counter := harness.Count(cfg)
	before := reconciles(t)
	act, stop := start(t, cfg, ns)
	defer stop()
	eventually(t, 60*time.Second, func() string {
		if n := reconciles(t) - before; n < 2 {
			return fmt.Sprintf("%v reconciles after the restart, want 2", n)
		}
		return ""
	})
	act.Settled(t, 0, 60*time.Second)
	if got := counter.Snapshot(); got.Writes != 0 || got.Reads+got.Watches == 0 {
		t.Fatalf("restart over converged CRs: %d writes (%v), %d reads: want 0 writes", got.Writes, got.WritesBy, got.Reads)
	}
	for _, n := range []string{"rc-0", "rc-1"} {
		if why := converged(c, ns, n, map[string]int{"rc-0": 2, "rc-1": 1}[n]); why != "" {
			t.Error(why)
		}
	}
}

var eventually = clustertest.Eventually

// crdConversion is the conversion strategy of the CRD name.
func crdConversion(t *testing.T, name string) string {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := newClient(t).Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	return strategy
}
