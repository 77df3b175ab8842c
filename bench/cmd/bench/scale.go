package main

// `go run ./bench/cmd/bench scale` (make bench-scale) measures cueop at the
// sizes the peers publish (KubeVela: 3,000 and 12,000 applications) and
// rewrites its section of docs/benchmarks.md (scalereport.go). For each N
// of BENCH_SCALE_POINTS, RedisClusters of 3 replicas (a ConfigMap, a
// Service and 3 Pods each):
//
//   - the floor (floor.go), on a fresh local control plane;
//   - one cueop process, on another fresh control plane: N CRs created
//     until all are Ready, then settled (writes, CPU, memory, p99
//     reconcile); restarted on the converged CRs (the resync); left idle
//     for BENCH_IDLE, every request counted;
//
// then the largest N again over BENCH_SCALE_SHARDS sharded replicas (the
// API server's ShardedListAndWatch gate off, as on managed clusters, unless
// BENCH_SCALE_GATE=1), and last the operator's
// resident memory at start in a cluster holding BENCH_SCALE_CRDS
// unrelated CRDs of BENCH_SCALE_CRD_OBJECTS objects each against an empty
// one (scalecrds.go). A point that does not converge within
// BENCH_SCALE_TIMEOUT is reported as such and the next one runs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/localcluster"
)

// scaleConfig are the settings of `bench scale`.
type scaleConfig struct {
	config
	Points []int
	// Shards is the replicas of the sharded point (0: none); Gate turns
	// the API server's ShardedListAndWatch gate on for it.
	Shards int
	Gate   bool
	// ShardedN is the CRs of the sharded point; 0 means the largest of
	// Points.
	ShardedN int
	// PerNamespace is the CRs of each namespace; 0 puts all in one.
	PerNamespace int
	// Timeout bounds each wait of a point; 0 means timeoutFor's default.
	Timeout          time.Duration
	CRDs, CRDObjects int
}

func loadScaleConfig() scaleConfig {
	sc := scaleConfig{config: loadConfig()}
	sc.Profile = envInt("BENCH_SCALE_PROFILE", 0) != 0
	spec := os.Getenv("BENCH_SCALE_POINTS")
	if spec == "" {
		spec = "3000,6000,12000"
	}
	for _, f := range strings.Split(spec, ",") {
		if spec == "none" {
			break // only the sharded point
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatalf("BENCH_SCALE_POINTS=%q: want numbers >= 1, comma-separated, or none", spec)
		}
		sc.Points = append(sc.Points, n)
	}
	sc.Shards = envInt("BENCH_SCALE_SHARDS", 3)
	if sc.Shards == 1 {
		fatalf("BENCH_SCALE_SHARDS=1: want 0 (none) or 2 or more")
	}
	sc.Gate = envInt("BENCH_SCALE_GATE", 0) != 0
	sc.ShardedN = envInt("BENCH_SCALE_SHARDED_N", 0)
	sc.PerNamespace = envInt("BENCH_SCALE_PER_NAMESPACE", 100)
	if len(sc.Points) == 0 && (sc.Shards == 0 || sc.ShardedN <= 0) {
		fatalf("BENCH_SCALE_POINTS=none: want the sharded point sized (BENCH_SCALE_SHARDED_N) and run (BENCH_SCALE_SHARDS)")
	}
	sc.Timeout = envDuration("BENCH_SCALE_TIMEOUT", 0)
	sc.CRDs = envInt("BENCH_SCALE_CRDS", 200)
	sc.CRDObjects = envInt("BENCH_SCALE_CRD_OBJECTS", 50)
	return sc
}

// timeoutFor bounds each wait of a point of n CRs: BENCH_SCALE_TIMEOUT, or
// 10 minutes plus 300 ms per CR: one replica needed 177 ms per CR at 6,000
// CRs on 2 cores, and the control plane's time per Pod grows with the
// cluster (150 ms per CR, the first default, gave 40 minutes at 12,000:
// less than twice the floor's 26).
func (sc scaleConfig) timeoutFor(n int) time.Duration {
	if sc.Timeout > 0 {
		return sc.Timeout
	}
	return 10*time.Minute + time.Duration(n)*300*time.Millisecond
}

// clusterOptions are the control plane of a point: kwok nodes for 3n Pods
// (5,000 each at most, BENCH_NODES at least), the sharded list and watch
// gate on with several replicas and BENCH_SCALE_GATE=1.
func (sc scaleConfig) clusterOptions(n, replicas int) localcluster.Options {
	o := localcluster.Options{Nodes: max(sc.Nodes, (3*n+4999)/5000)}
	if replicas > 1 && sc.Gate {
		o.FeatureGates = map[string]bool{"ShardedListAndWatch": true}
	}
	return o
}

func runScale() {
	sc := loadScaleConfig()
	runSection(sc.config, scaleTitle, func(ctx context.Context, s *session) (string, error) {
		rep, err := (&scaleBench{newRig(s)}).scale(ctx, sc)
		if err != nil {
			return "", err
		}
		return rep.markdown(), nil
	})
}

// scaleBench is `bench scale`: cueop at the peers' sizes, each point
// against the floor of a cluster with no operator (scalereport.go).
type scaleBench struct{ rig }

func (b *scaleBench) scale(ctx context.Context, sc scaleConfig) (*scaleReport, error) {
	rep := &scaleReport{cfg: sc, started: time.Now(), machine: machineInfo()}
	tmp, err := os.MkdirTemp("", "cueop-bench-")
	if err != nil {
		return nil, err
	}
	b.tmp = tmp
	defer os.RemoveAll(tmp)
	runs := make([][2]int, 0, len(sc.Points)+1)
	for _, n := range sc.Points {
		runs = append(runs, [2]int{n, 1})
	}
	if sc.Shards > 0 {
		n := sc.ShardedN
		if n <= 0 {
			n = slices.Max(sc.Points)
		}
		runs = append(runs, [2]int{n, sc.Shards})
	}
	// Smallest first, so that a run stopped early has the most points.
	slices.SortStableFunc(runs, func(a, b [2]int) int { return a[0] - b[0] })
	for _, r := range runs {
		pt := b.scalePoint(ctx, sc, r[0], r[1], rep)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.points = append(rep.points, pt)
		b.partial(rep)
	}
	if sc.CRDs > 0 {
		rep.crds, err = b.unrelatedCRDs(ctx, sc)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			rep.crds.Err = err.Error()
			b.logf("unrelated CRDs: %v", err)
		}
	}
	rep.elapsed = time.Since(b.start)
	return rep, nil
}

// partial writes the section as measured so far to scale-partial.md in
// the output directory, so that a run stopped before its end (a point
// past its timeout, Ctrl-C) leaves the points it finished.
func (b *scaleBench) partial(rep *scaleReport) {
	rep.elapsed = time.Since(b.start)
	p := filepath.Join(b.cfg.Out, "scale-partial.md")
	if err := os.WriteFile(p, []byte(rep.markdown()), 0o644); err != nil {
		b.logf("partial report: %v", err)
	}
}

// scalePoint is what one point measured; Err says why it stopped short.
type scalePoint struct {
	N, Replicas int
	Floor       time.Duration
	FloorErr    string
	Err         string
	// Ready are the CRs Ready when the wait for all ended; AllReady the
	// time from the first create until all were.
	Ready    int
	AllReady time.Duration
	// FloorCPU and CPU are each control plane component's CPU (by its
	// name in localcluster) from the first create until every Pod (the
	// floor) or every CR (cueop) was Ready, in ms per CR.
	FloorCPU, CPU map[string]float64
	// CPUPerCR is the operator's CPU (workers included, from its synced
	// start until it settled) per CR, in ms; all replicas together.
	CPUPerCR float64
	// PeakRSS and PeakHeap are the largest process's VmHWM (plus its
	// workers') and peak heap in use, in bytes; RSSPerCR and HeapPerCR
	// their growth from the synced start, all replicas together, per CR.
	PeakRSS, PeakHeap   uint64
	RSSPerCR, HeapPerCR float64
	P99                 time.Duration
	WritesPerCR         float64
	// Writes are the writes while converging, by request.
	Writes harness.Counts
	// ConversionsPerCR are the objects the conversion webhook converted
	// while converging, per CR; ConversionSeconds the time its reviews
	// took, all replicas together.
	ConversionsPerCR, ConversionSeconds float64
	// ConversionsByPerCR are ConversionsPerCR by cause (conversionCause).
	ConversionsByPerCR map[string]float64
	// Resync is from the restart until the fleet had reconciled N times
	// and then wrote and reconciled nothing more for 2s (Resync ends where
	// those 2s began); ResyncWrites the writes until then.
	Resync       time.Duration
	ResyncWrites int64
	ResyncAll    harness.Counts
	// Idle are the requests during the idle window.
	Idle harness.Counts
}

func (pt scalePoint) label() string {
	if pt.Replicas > 1 {
		return fmt.Sprintf("%d, %d replicas", pt.N, pt.Replicas)
	}
	return fmt.Sprint(pt.N)
}

// scalePoint measures the floor, then cueop, for n CRs on replicas.
func (b *scaleBench) scalePoint(ctx context.Context, sc scaleConfig, n, replicas int, rep *scaleReport) scalePoint {
	pt := scalePoint{N: n, Replicas: replicas}
	b.logf("point %s: floor", pt.label())
	floor, floorCPU, err := b.floorRun(ctx, sc, n, replicas)
	if err != nil {
		pt.FloorErr = err.Error()
		b.logf("point %s: %v", pt.label(), err)
	}
	pt.Floor, pt.FloorCPU = floor, floorCPU
	b.logf("point %s: floor %.1fs; cueop", pt.label(), floor.Seconds())
	if err := b.operatorPoint(ctx, sc, &pt, rep); err != nil {
		pt.Err = err.Error()
		b.logf("point %s: %v", pt.label(), err)
	}
	return pt
}

// operatorPoint converges, restarts and idles cueop at pt on a control
// plane of its own.
func (b *scaleBench) operatorPoint(ctx context.Context, sc scaleConfig, pt *scalePoint, rep *scaleReport) error {
	stop, err := b.lab.startCluster(ctx, sc.clusterOptions(pt.N, pt.Replicas))
	defer stop()
	if err != nil {
		return err
	}
	// A restart lists 6N objects before its caches have synced.
	b.ops.syncTimeout = max(2*time.Minute, sc.timeoutFor(pt.N)/4)
	if rep.versions == "" {
		rep.versions = b.lab.versions(ctx)
	}
	tmpl, err := b.templatesCopy()
	if err != nil {
		return err
	}
	if err := b.lab.installCRD(ctx, tmpl); err != nil {
		return err
	}
	sp, err := b.lab.spread(ctx, "bench-scale-", pt.N, sc.PerNamespace)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("scale-%d", pt.N)
	if pt.Replicas > 1 {
		name += fmt.Sprintf("-shards%d", pt.Replicas)
	}
	f, err := b.ops.startFleet(ctx, name, sp, tmpl, pt.Replicas)
	if err != nil {
		return err
	}
	err = b.scaleConverge(ctx, sc, pt, f, sp)
	f.stop()
	if err != nil {
		return err
	}
	return b.restartAndIdle(ctx, sc, pt, name+"-restart", sp, tmpl)
}

// scaleConverge creates the CRs and waits until all are Ready and the
// fleet settled.
func (b *scaleBench) scaleConverge(ctx context.Context, sc scaleConfig, pt *scalePoint, f fleet, sp crSpace) error {
	cr, err := b.lab.trackCRs(ctx, sp.served())
	if err != nil {
		return err
	}
	defer cr.stop()
	s0 := f.each()
	start, cpu0 := time.Now(), b.lab.cpuSnapshot()
	if err := b.lab.createCRsThen(ctx, sp, pt.N, nil); err != nil {
		return err
	}
	timeout := sc.timeoutFor(pt.N)
	// measured takes the processes' figures and heap profiles: once
	// settled, or when the wait ended, to tell why.
	measured := func() {
		pt.converged(s0, f.each())
		for _, p := range f {
			p.writeHeapProfile(b.cfg.Out)
		}
	}
	allAt, err := waitFor(ctx, timeout, func() bool { return cr.readyCount() == pt.N })
	pt.Ready = cr.readyCount()
	if err != nil {
		measured()
		return fmt.Errorf("%d of %d CRs Ready: %w", pt.Ready, pt.N, err)
	}
	pt.AllReady, pt.CPU = allAt.Sub(start), cpu0.perCR(b.lab.cpuSnapshot(), pt.N)
	if _, _, err := f.settle(ctx, timeout, 0); err != nil {
		return err
	}
	measured()
	b.logf("point %s: all Ready in %.1fs, %.2f writes/CR, peak RSS %s", pt.label(), pt.AllReady.Seconds(), pt.WritesPerCR, mib(pt.PeakRSS))
	return nil
}

// converged fills pt's figures from the stats of each process at its
// synced start (s0) and once settled (s1).
func (pt *scalePoint) converged(s0, s1 []opStats) {
	m0, m1 := merged(s0), merged(s1)
	n := float64(pt.N)
	pt.CPUPerCR = (m1.CPUSeconds - m0.CPUSeconds) / n * 1000
	pt.PeakRSS, pt.PeakHeap = uint64(m1.MaxRSS), m1.PeakHeapInuse
	for i := range s1 {
		pt.RSSPerCR += float64(s1[i].MaxRSS-s0[i].MaxRSS) / n
		pt.HeapPerCR += (float64(s1[i].PeakHeapInuse) - float64(s0[i].HeapInuse)) / n
	}
	pt.P99 = m1.ReconcileTime.quantile(0.99)
	pt.Writes = m1.Counts.Sub(m0.Counts)
	pt.WritesPerCR = float64(crWritesOf(pt.Writes)) / n
	pt.ConversionsPerCR = (m1.Conversions - m0.Conversions) / n
	pt.ConversionSeconds = m1.ConversionSeconds - m0.ConversionSeconds
	pt.ConversionsByPerCR = map[string]float64{}
	for cause, c := range m1.ConversionsBy {
		if d := (c - m0.ConversionsBy[cause]) / n; d > 0 {
			pt.ConversionsByPerCR[cause] = d
		}
	}
}

// restartAndIdle starts the fleet anew on the converged CRs, times its
// resync and counts its requests while idle.
func (b *scaleBench) restartAndIdle(ctx context.Context, sc scaleConfig, pt *scalePoint, name string, sp crSpace, tmpl string) error {
	start := time.Now()
	f, err := b.ops.startFleet(ctx, name, sp, tmpl, pt.Replicas)
	if err != nil {
		return err
	}
	defer f.stop()
	st, quietAt, err := f.settle(ctx, sc.timeoutFor(pt.N), float64(pt.N))
	if err != nil {
		return fmt.Errorf("resync: %d reconciles of %d CRs: %w", int(st.Reconciles), pt.N, err)
	}
	pt.Resync = quietAt.Sub(start)
	pt.ResyncWrites, pt.ResyncAll = crWritesOf(st.Counts), st.Counts
	b.logf("point %s: resync in %.1fs, %d writes; idle %s", pt.label(), pt.Resync.Seconds(), pt.ResyncWrites, sc.Idle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(sc.Idle):
	}
	pt.Idle = f.stats().Counts.Sub(st.Counts)
	return nil
}
