package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// held is cueop_shard_ranges_held: the ranges each replica of the
	// process holds now.
	held = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cueop_shard_ranges_held",
		Help: "Shard ranges (and their Leases) the replica holds now.",
	}, []string{"replica"})
	// filterMode is cueop_shard_filter: 1 for the replica's filter mode.
	filterMode = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cueop_shard_filter",
		Help: "1 for who filters the replica's ranges: filter=apiserver (the API server honours shardSelector) or filter=client (it ignores it: each range's cache filters on the client).",
	}, []string{"replica", "filter"})
	// fencedGauge is cueop_shard_fenced: 1 while the replica is fenced.
	fencedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cueop_shard_fenced",
		Help: "1 while the replica takes no range because replicas of another shard count (--shards) serve, else 0.",
	}, []string{"replica"})
	// clientDropped is cueop_shard_client_dropped_total.
	clientDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cueop_shard_client_dropped_total",
		Help: "Objects of other ranges (list items, watch events) an API server that ignores shardSelector sent, dropped by the client-side filter.",
	})
)

func init() { metrics.Registry.MustRegister(held, filterMode, fencedGauge, clientDropped) }

// SetFilter records the filter mode of replica in cueop_shard_filter;
// the returned func removes it.
func SetFilter(replica string, f Filter) (remove func()) {
	filterMode.WithLabelValues(replica, string(f)).Set(1)
	return func() { filterMode.DeleteLabelValues(replica, string(f)) }
}

// setFenced records in cueop_shard_fenced whether replica is fenced.
func setFenced(replica string, fenced bool) {
	v := 0.0
	if fenced {
		v = 1
	}
	fencedGauge.WithLabelValues(replica).Set(v)
}
