package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cueop/cueop/bench/harness"
)

// fleet are the operator processes of one measurement: one unsharded
// cueop, or the replicas of a sharded one.
type fleet []*opProc

// startFleet starts replicas cueop processes on ns, named name (and
// name-replica-i when sharded), and waits until they have synced and,
// when sharded, hold one range each.
func (o *operators) startFleet(ctx context.Context, name string, sp crSpace, tmpl string, replicas int) (fleet, error) {
	if replicas <= 1 {
		p, err := o.startOperator(ctx, "cueop", name, sp.served(), tmpl)
		return fleet{p}, err
	}
	f := make(fleet, 0, replicas)
	for i := range replicas {
		p, err := o.startOperator(ctx, "cueop", name+"-"+replicaName(i), sp.served(), tmpl,
			"-shards", fmt.Sprint(replicas), "-identity", replicaName(i), "-lease-namespace", sp.leases())
		if err != nil {
			f.stop()
			return nil, err
		}
		f = append(f, p)
	}
	if err := o.lab.waitBalanced(ctx, sp.leases(), replicas); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// stop stops every process, together.
func (f fleet) stop() {
	var wg sync.WaitGroup
	for _, p := range f {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// each are the stats of every process.
func (f fleet) each() []opStats {
	out := make([]opStats, len(f))
	for i, p := range f {
		out[i] = p.mustStats()
	}
	return out
}

// stats are the stats of every process merged (merged).
func (f fleet) stats() opStats { return merged(f.each()) }

// merged sums the counters of sts and keeps the largest of their memory
// figures (one process's peak).
func merged(sts []opStats) opStats {
	var m opStats
	m.Counts = harness.Counts{WritesBy: map[string]int64{}}
	for _, st := range sts {
		m.Counts = m.Counts.Add(st.Counts)
		m.Reconciles += st.Reconciles
		m.QueueDepth += st.QueueDepth
		m.Renders += st.Renders
		m.CPUSeconds += st.CPUSeconds
		m.HeapInuse = max(m.HeapInuse, st.HeapInuse)
		m.PeakHeapInuse = max(m.PeakHeapInuse, st.PeakHeapInuse)
		m.PeakHeapAlloc = max(m.PeakHeapAlloc, st.PeakHeapAlloc)
		m.MaxRSS = max(m.MaxRSS, st.MaxRSS)
		m.ReconcileTime = m.ReconcileTime.add(st.ReconcileTime)
		m.Conversions += st.Conversions
		m.ConversionSeconds += st.ConversionSeconds
		for cause, n := range st.ConversionsBy {
			if m.ConversionsBy == nil {
				m.ConversionsBy = map[string]float64{}
			}
			m.ConversionsBy[cause] += n
		}
	}
	return m
}

// crWritesOf are the writes of c to CRs, their children and Events: all
// but a sharded replica's Lease renewals (every retry period, by design)
// and the conversion webhook's CA bundle, which each process writes into
// the CRD once as it starts.
func crWritesOf(c harness.Counts) int64 {
	w := c.Writes
	for k, v := range c.WritesBy {
		if strings.HasSuffix(k, " leases") || strings.HasSuffix(k, " customresourcedefinitions") {
			w -= v
		}
	}
	return w
}

// settle waits until the fleet reconciled at least minReconciles times,
// then sent no write (crWritesOf) and ended no reconcile for 2s, and, when
// unsharded, its queue is empty; at most timeout. It returns the merged
// stats then and when that quiet period began. A sharded replica's queue
// depth is not waited for: the gauge keeps the depth a range's queue had
// when the replica gave that range up.
func (f fleet) settle(ctx context.Context, timeout time.Duration, minReconciles float64) (opStats, time.Time, error) {
	return settleBy(ctx, timeout, f.stats, func(last, st opStats) bool {
		return crWritesOf(st.Counts) != crWritesOf(last.Counts) || st.Reconciles != last.Reconciles ||
			st.Reconciles < minReconciles || (len(f) == 1 && st.QueueDepth > 0)
	})
}
