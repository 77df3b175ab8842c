package main

import (
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
)

// runSharded runs `cueop run --shards N` with N > 1: a replica that holds
// ranges of the CRs through their Leases and serves those (engine/shard).
// It exits at once with an error that says how to enable the feature gate
// when the API server ignores shardSelector.
func runSharded(g *globals, f *runFlags) error {
	if f.shards < 1 {
		return fmt.Errorf("--shards %d: want 1 or more", f.shards)
	}
	if f.leaderElect {
		return errors.New("--leader-elect and --shards greater than 1 exclude each other: each range's Lease elects its holder")
	}
	s, err := newSharded(g, f)
	if err != nil {
		return err
	}
	return s.Run(ctrl.SetupSignalHandler())
}

func newSharded(g *globals, f *runFlags) (*operator.Sharded, error) {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	opts, err := g.renderOptions()
	if err != nil {
		return nil, err
	}
	s, err := operator.NewSharded(cfg, operator.Options{
		Templates: g.templates, InstallCRDs: f.installCRDs, AllowedKinds: opts.AllowedKinds, Budget: opts.Budget,
		MaxConcurrent: f.maxConcurrent, Namespace: f.namespace, RolloutMaxInFlight: f.rolloutMaxInFlight,
		Manager: ctrl.Options{
			Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
			HealthProbeBindAddress: f.probeAddr,
		},
	}, operator.Sharding{Shards: f.shards, Namespace: f.leaderNamespace})
	if err != nil {
		return nil, err
	}
	mgr := s.Manager()
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	return s, mgr.AddReadyzCheck("readyz", healthz.Ping)
}
