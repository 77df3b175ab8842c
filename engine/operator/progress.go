package operator

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/reconcile"
)

// KindProgress is the rollout state of one kind.
type KindProgress struct {
	Kind, Package string
	GVK           schema.GroupVersionKind // the CRs' group, version and kind
	reconcile.Progress
}

// running are the operators of this process, for the rollout collector.
var running sync.Map // *Operator -> struct{}

var (
	crsDesc = prometheus.NewDesc("cueop_rollout_crs",
		"CRs by the template revision they were last rendered with.", []string{"kind", "revision"}, nil)
	inFlightDesc = prometheus.NewDesc("cueop_rollout_in_flight",
		"CRs moving to the newest template revision.", []string{"kind"}, nil)
	waitingDesc = prometheus.NewDesc("cueop_rollout_waiting",
		"CRs waiting for their turn to move to the newest template revision.", []string{"kind"}, nil)
	haltedDesc = prometheus.NewDesc("cueop_rollout_halted",
		"1 when the rollout of the newest revision halted on stalled CRs.", []string{"kind", "revision"}, nil)
)

// rolloutCollector reports the rollout state of every running operator.
type rolloutCollector struct{}

func (rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{crsDesc, inFlightDesc, waitingDesc, haltedDesc} {
		ch <- d
	}
}

// Collect reports each kind once, even when several operators of this
// process (tests, a standby replica) serve it; the operators of a sharded
// replica's ranges are added up (MergeProgress).
func (rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	var lists, shards [][]KindProgress
	running.Range(func(key, _ any) bool {
		if op := key.(*Operator); op.opts.Shard != nil {
			shards = append(shards, op.Progress())
		} else {
			lists = append(lists, op.Progress())
		}
		return true
	})
	for _, list := range append(lists, MergeProgress(shards...)) {
		for _, p := range list {
			if seen[p.Kind] {
				continue
			}
			seen[p.Kind] = true
			for rev, n := range p.PerRevision {
				ch <- prometheus.MustNewConstMetric(crsDesc, prometheus.GaugeValue, float64(n), p.Kind, rev)
			}
			ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(p.InFlight), p.Kind)
			ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(p.Waiting), p.Kind)
			ch <- prometheus.MustNewConstMetric(haltedDesc, prometheus.GaugeValue, boolValue(p.Halted), p.Kind, p.Revision)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
