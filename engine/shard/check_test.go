package shard_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

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
