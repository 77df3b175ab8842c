package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/source"
)

func loadErrorsTotal(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "cueop_template_load_errors_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestRunShardedReportsModuleRefusals: cueop run --shards hands the module
// versions its source refused, those refused before the replica was made
// included, to the replica (operator.Sharded.ModuleRefused), which counts
// them in cueop_template_load_errors_total and marks them on its ranges'
// kinds; they were left unreported.
func TestRunShardedReportsModuleRefusals(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &globals{templates: "../../templates", allowedKinds: render.DefaultAllowedKinds, readableKinds: render.DefaultReadableKinds, dataKinds: render.DefaultDataKinds}
	f := &runFlags{kubeconfig: kubeconfig, leaderNamespace: "default", metricsAddr: "0", probeAddr: "0", maxConcurrent: 1,
		shard:   shardFlags{shards: 2, leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: time.Second},
		webhook: webhookFlags{local: true}, holder: holderFlags{instance: operator.DefaultInstance}}
	before := loadErrorsTotal(t)
	g.source.refusals.report(source.Refusal{Ref: "oci://registry.example/example.com/redis@v1", Module: "example.com/redis@v1", Version: "v1.1.0",
		Err: errors.New("module example.com/redis@v1.1.0: file rediscluster/rediscluster.cue: too large")})
	if _, err := newSharded(g, f); err != nil {
		t.Fatal(err)
	}
	if got := loadErrorsTotal(t); got != before+1 {
		t.Errorf("cueop_template_load_errors_total = %v after the sharded replica was made, want %v: the refusal held was not reported", got, before+1)
	}
	g.source.refusals.report(source.Refusal{Ref: "oci://registry.example/example.com/redis@v1", Module: "example.com/redis@v1", Version: "v1.2.0", Err: errors.New("refused")})
	if got := loadErrorsTotal(t); got != before+2 {
		t.Errorf("cueop_template_load_errors_total = %v, want %v: a refusal after the replica was made was not reported", got, before+2)
	}
}
