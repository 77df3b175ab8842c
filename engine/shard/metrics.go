package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// held is cueop_shard_ranges_held: the ranges each replica of the process
// holds now.
var held = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "cueop_shard_ranges_held",
	Help: "Shard ranges (and their Leases) the replica holds now.",
}, []string{"replica"})

func init() { metrics.Registry.MustRegister(held) }
