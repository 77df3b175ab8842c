package shard_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestCheckServerRefusesWithoutTheGate(t *testing.T) {
	t.Parallel()
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	err = shard.CheckServer(t.Context(), cs.CoordinationV1(), "default")
	if !errors.Is(err, shard.ErrNotHonoured) {
		t.Fatalf("CheckServer on an API server without the gate: %v, want ErrNotHonoured", err)
	}
	if !strings.Contains(err.Error(), "--feature-gates=ShardedListAndWatch=true") {
		t.Errorf("the error does not say how to enable the gate: %v", err)
	}
}

// A sharded replica checks the API server before anything else, and exits
// with the refusal.
func TestShardedReplicaRefusesWithoutTheGate(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	s, err := operator.NewSharded(clustertest.Config(), operator.Options{
		Templates: t.TempDir(),
		Manager:   ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"},
	}, operator.Sharding{Shards: 2, Identity: "r", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context()); !errors.Is(err, shard.ErrNotHonoured) {
		t.Fatalf("Run on an API server without the gate: %v, want ErrNotHonoured", err)
	}
}
