package main

import (
	"context"
	"fmt"
	"runtime/metrics"
)

// DefaultSmallN is the size of the extra convergence run of each operator
// that measures peak RSS at a small scale (BENCH_SMALL_N; 0 skips it).
const DefaultSmallN = 300

// allocs reads the process's cumulative heap allocations.
func allocs() (bytes, objects uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// smallRuns converges BENCH_SMALL_N CRs once with each operator, each a
// fresh process in a fresh namespace deleted afterwards, for the peak RSS
// at that scale.
func (c *comparison) smallRuns(ctx context.Context, rep *report) error {
	n := envInt("BENCH_SMALL_N", DefaultSmallN)
	if n == 0 || n == c.cfg.N {
		return nil
	}
	small := c.withN(n)
	sub := &report{cfg: small.cfg}
	for _, op := range append([]string{opInProcess}, ops...) {
		if _, err := small.oneRun(ctx, sub, op, 100, false); err != nil {
			return fmt.Errorf("%s, %d CRs: %w", op, n, err)
		}
	}
	rep.small, rep.smallN = sub.conv, n
	return nil
}

// withN is c with n CRs a run: its session, lab and operators copied, the
// copies sharing the control plane, clients and processes.
func (c *comparison) withN(n int) *comparison {
	s := *c.session
	s.cfg.N = n
	l := *c.lab
	l.session = &s
	o := *c.ops
	o.session, o.lab = &s, &l
	return &comparison{rig: rig{session: &s, lab: &l, ops: &o}, stormBin: c.stormBin}
}

// moreTargets are the rows of the targets table on the operator's own
// cost against the baseline's.
func (r *report) moreTargets(p func(string, ...any)) {
	n := float64(r.cfg.N)
	if s, f := r.render["BenchmarkRender/cueop/replicas=3"], r.render["BenchmarkRender/cueop-fullpods/replicas=3"]; s != nil && f != nil {
		c := median(f.NsOp) / 1e6
		p("| render, 3 replicas, Pods as the API server returns them (ms/op, median) | %.3f | | | cueop ≤ 0.4 ms | %s |\n", c, mark(c <= 0.4))
	}
	if len(r.runs("cueop")) > 0 && len(r.runs("baseline")) > 0 {
		cpu := func(c convResult) float64 { return c.Stats.CPUSeconds / n * 1000 }
		c, b := median(r.values("cueop", cpu)), median(r.values("baseline", cpu))
		p("| operator CPU per converged CR (ms, median of runs) | %.1f | %.1f | %.2f | ≤ 1.3 | %s |\n", c, b, c/b, mark(c/b <= 1.3))
		heap := func(c convResult) float64 { return float64(c.Stats.PeakHeapInuse) / (1 << 20) }
		c, b = maxOf(r.values("cueop", heap)), maxOf(r.values("baseline", heap))
		p("| peak heap in use, ratio (max of runs) | %.1f | %.1f | %.2f | ≤ 1.3 | %s |\n", c, b, c/b, mark(c/b <= 1.3))
		w := func(c convResult) float64 { return float64(c.Counts.Writes) / n }
		c = median(r.values("cueop", w))
		p("| writes per CR while converging | %.2f | %.2f | | ≤ 8 | %s |\n", c, median(r.values("baseline", w)), mark(c <= 8.005))
		ab := func(c convResult) float64 { return float64(c.Stats.AllocBytes) / n / 1024 }
		ao := func(c convResult) float64 { return float64(c.Stats.AllocObjects) / n }
		p("| heap allocated per converged CR (KiB; objects) | %.0f; %.0f | %.0f; %.0f | %.2f | (no target) | |\n",
			median(r.values("cueop", ab)), median(r.values("cueop", ao)), median(r.values("baseline", ab)), median(r.values("baseline", ao)),
			median(r.values("cueop", ab))/median(r.values("baseline", ab)))
	}
	cs, bs := r.steadyOf("cueop"), r.steadyOf("baseline")
	if cs != nil && bs != nil {
		ratio := cs.Resync.Seconds() / bs.Resync.Seconds()
		p("| resync of %d converged CRs (s) | %.2f | %.2f | %.1f | ≤ 2 | %s |\n", r.cfg.N, cs.Resync.Seconds(), bs.Resync.Seconds(), ratio, mark(ratio <= 2))
	}
	var crss, brss, cheap, bheap float64
	for _, c := range r.small {
		rss, heap := float64(c.Stats.MaxRSS)/(1<<20), float64(c.Stats.PeakHeapInuse)/(1<<20)
		switch c.Op {
		case "cueop":
			crss, cheap = rss, heap
		case "baseline":
			brss, bheap = rss, heap
		}
	}
	r.isolationTargets(p)
	if crss > 0 && brss > 0 {
		p("| peak RSS (VmHWM) with %d CRs, one run (MiB); peak heap in use | %.1f; %.1f | %.1f; %.1f | %.2f | cueop ≤ 80 MiB | %s |\n",
			r.smallN, crss, cheap, brss, bheap, crss/brss, mark(crss <= 80))
	}
}
