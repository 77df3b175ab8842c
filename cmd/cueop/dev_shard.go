package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/localcluster"
)

// devView is what `cueop dev` follows: the CRs and the rollouts.
type devView interface {
	Parents() cache.Cache
	Progress() []operator.KindProgress
	StorageMigrations() []operator.MigrationProgress
}

// devFeatureGates turns the sharded list and watch on when dev runs
// sharded replicas.
func devFeatureGates(f *devFlags) map[string]bool {
	if f.shards <= 1 && f.replicas <= 1 {
		return nil
	}
	return map[string]bool{"ShardedListAndWatch": true}
}

// devOperators builds what dev runs: one operator, or with --shards or
// --replicas that many sharded replicas in this process, their shard
// Leases in the default namespace (`kubectl get leases`).
func devOperators(out io.Writer, g *globals, f *devFlags, cluster *localcluster.Cluster) (devView, func(context.Context) error, error) {
	if f.shards <= 1 && f.replicas <= 1 {
		op, err := devOperator(g, f, cluster)
		if err != nil {
			return nil, nil, err
		}
		return op, op.Run, nil
	}
	opts, err := g.renderOptions()
	if err != nil {
		return nil, nil, err
	}
	parents, err := cache.New(cluster.Config, cache.Options{})
	if err != nil {
		return nil, nil, err
	}
	d := &shardedDev{parents: parents}
	for i := range f.replicas {
		metrics := "0"
		if i == 0 {
			metrics = f.metricsAddr
		}
		s, err := operator.NewSharded(cluster.Config, operator.Options{
			Templates: g.templates, InstallCRDs: true, AllowedKinds: opts.AllowedKinds, ReadableKinds: opts.ReadableKinds, DataKinds: opts.DataKinds, MaxConcurrent: f.maxConcurrent,
			Budget: opts.Budget, TemplateLimits: g.limits.limits(), RolloutMaxInFlight: f.maxInFlight,
			Identities: f.ids.config(), TemplatesLoaded: f.ids.hook(),
			Manager: ctrl.Options{Metrics: metricsserver.Options{BindAddress: metrics}, HealthProbeBindAddress: "0", Logger: f.log},
		}, operator.Sharding{Shards: f.shards, Identity: fmt.Sprintf("dev-replica-%d", i), Namespace: "default"})
		if err != nil {
			return nil, nil, err
		}
		d.replicas = append(d.replicas, s)
	}
	g.source.refusals.deliver(func(ref string, err error) { // source.go: each replica reports it
		for _, s := range d.replicas {
			s.ModuleRefused(ref, err)
		}
	})
	fmt.Fprintf(out, "%d replicas (dev-replica-0..%d) share %d shard ranges: kubectl --kubeconfig %s get leases -n default\n",
		f.replicas, f.replicas-1, f.shards, f.kubeconfigOut)
	return d, d.run, nil
}

// shardedDev runs the replicas of `cueop dev --replicas M`, and a cache of
// every CR for the status lines.
type shardedDev struct {
	parents  cache.Cache
	replicas []*operator.Sharded
}

func (d *shardedDev) Parents() cache.Cache { return d.parents }

func (d *shardedDev) Progress() []operator.KindProgress {
	var all [][]operator.KindProgress
	for _, s := range d.replicas {
		all = append(all, s.Progress())
	}
	return operator.MergeProgress(all...)
}

func (d *shardedDev) StorageMigrations() []operator.MigrationProgress {
	var out []operator.MigrationProgress
	for _, s := range d.replicas {
		out = append(out, s.StorageMigrations()...)
	}
	return out
}

// run runs every replica until ctx is done or one fails.
func (d *shardedDev) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			cancel()
		}
	}
	wg.Go(func() { fail(d.parents.Start(ctx)) })
	for _, s := range d.replicas {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				fail(fmt.Errorf("replica %s: %w", s.Identity(), err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
