package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/shard"
)

// leaderElectionID is the Lease of `cueop run --leader-elect`; while it is
// held, a sharded replica takes no range (an unsharded leader serves).
const leaderElectionID = "cueop-leader"

// shardFlags are the flags of a sharded `cueop run`.
type shardFlags struct {
	shards                                    int
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func addShardFlags(cmd *cobra.Command, f *shardFlags) {
	fl := cmd.Flags()
	fl.IntVar(&f.shards, "shards", 1, "ranges of CRs spread over the replicas, each held through a Lease (filtered by kube-apiserver with its ShardedListAndWatch feature gate, else on the client)")
	fl.DurationVar(&f.leaseDuration, "shard-lease-duration", shard.DefaultLeaseDuration, "with --shards: how long a dead replica's ranges stay held")
	fl.DurationVar(&f.renewDeadline, "shard-renew-deadline", shard.DefaultRenewDeadline, "with --shards: how long a replica that cannot renew a range's Lease keeps serving it (less than the lease duration)")
	fl.DurationVar(&f.retryPeriod, "shard-retry-period", shard.DefaultRetryPeriod, "with --shards: how often Leases are renewed and free ranges tried")
}

// runSharded runs `cueop run --shards N` with N > 1: a replica that holds
// ranges of the CRs through their Leases and serves those (engine/shard),
// filtered by the API server where it honours shardSelector, else on the
// client (it logs which).
func runSharded(g *globals, f *runFlags) error {
	if f.shard.shards < 1 {
		return fmt.Errorf("--shards %d: want 1 or more", f.shard.shards)
	}
	if f.shard.renewDeadline >= f.shard.leaseDuration {
		return fmt.Errorf("--shard-renew-deadline %s must be less than --shard-lease-duration %s: a replica must stop serving a range before another may take it", f.shard.renewDeadline, f.shard.leaseDuration)
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
	cfg, opts, err := operatorOptions(g, f) // run.go
	if err != nil {
		return nil, err
	}
	s, err := operator.NewSharded(cfg, opts, operator.Sharding{Shards: f.shard.shards, Namespace: f.leaderNamespace, Fence: []string{leaderElectionID},
		LeaseDuration: f.shard.leaseDuration, RenewDeadline: f.shard.renewDeadline, RetryPeriod: f.shard.retryPeriod})
	if err != nil {
		return nil, err
	}
	// The module versions refused at fetch, on every range's kinds (source.go).
	g.source.refusals.deliver(s.ModuleRefused)
	if err := f.webhook.addRotator(s.Manager(), opts.Conversion, s.ConversionNeeded()); err != nil { // webhook.go
		return nil, err
	}
	return s, addProbes(s.Manager())
}
