package main

// `go run ./bench/cmd/bench identities` (make bench-identities) measures
// cueop with per-kind identities (operator.Options.Identities: each kind's
// children and references requested as its own ServiceAccount) against the
// shared identity (every kind as the operator itself), on one local
// control plane, and rewrites its section of docs/benchmarks.md
// (idreport.go). For each N of BENCH_ID_POINTS (default 300,3000), CRs of
// the four kinds of ./templates taking turns (Blog, RedisCluster,
// StaticSite, WebApp; idkinds.go), 100 in each namespace (BENCH_ID_PER_NAMESPACE),
// converged BENCH_ID_RUNS times (default 1) per mode, the two modes
// alternating (identity first in the first pair of runs, shared first in
// the next, ...): one cueop process serving
// every namespace, all N created at once, until all are Ready, then
// settled; its requests and peak RSS (render workers included). Between
// runs the operator stops and the run's namespaces are deleted. The kinds'
// ServiceAccounts, ClusterRoles and ClusterRoleBindings are created once, in
// BENCH_ID_NAMESPACE (default identity.DefaultNamespace); the operator
// process keeps the control plane's admin credentials, which may
// impersonate them. BENCH_ID_WARMUP CRs (default 40; 0 skips it) are
// converged first with the shared identity, unrecorded.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/localcluster"
)

// idConfig are the settings of `bench identities`.
type idConfig struct {
	config
	Points       []int
	PerNamespace int
	Warmup       int
	Namespace    string
}

func loadIDConfig() idConfig {
	ic := idConfig{config: loadConfig()}
	ic.Profile = false
	spec := os.Getenv("BENCH_ID_POINTS")
	if spec == "" {
		spec = "300,3000"
	}
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatalf("BENCH_ID_POINTS=%q: want numbers >= 1, comma-separated", spec)
		}
		ic.Points = append(ic.Points, n)
	}
	ic.PerNamespace = envInt("BENCH_ID_PER_NAMESPACE", 100)
	if ic.Runs = envInt("BENCH_ID_RUNS", 1); ic.Runs < 1 {
		fatalf("BENCH_ID_RUNS must be at least 1")
	}
	ic.Warmup = envInt("BENCH_ID_WARMUP", 40)
	ic.Namespace = identity.DefaultNamespace
	if v := os.Getenv("BENCH_ID_NAMESPACE"); v != "" {
		ic.Namespace = v
	}
	return ic
}

// idModes are the two modes, in the order of the first point.
var idModes = []string{"identity", "shared"}

func runIdentities() {
	ic := loadIDConfig()
	runSection(ic.config, idTitle, func(ctx context.Context, s *session) (string, error) {
		rep, err := (&idBench{newRig(s)}).identities(ctx, ic)
		if err != nil {
			return "", err
		}
		return rep.markdown(), nil
	})
}

// idBench is `bench identities`: per-kind identities against the shared
// one (idReport).
type idBench struct{ rig }

func (b *idBench) identities(ctx context.Context, ic idConfig) (*idReport, error) {
	rep := &idReport{cfg: ic, started: time.Now(), machine: machineInfo()}
	tmp, err := os.MkdirTemp("", "cueop-bench-")
	if err != nil {
		return nil, err
	}
	b.tmp = tmp
	defer os.RemoveAll(tmp)
	n := 0
	for _, p := range ic.Points {
		n = max(n, p)
	}
	b.logf("starting the local control plane (%d kwok nodes)", max(ic.Nodes, (2*n+4999)/5000))
	stop, err := b.lab.startCluster(ctx, localcluster.Options{Nodes: max(ic.Nodes, (2*n+4999)/5000),
		ExtraArgs: map[string][]string{localcluster.KubeAPIServer: {"--delete-collection-workers=8"}}})
	defer stop()
	if err != nil {
		return nil, err
	}
	rep.versions = b.lab.versions(ctx)
	tmpl, err := b.allTemplatesCopy()
	if err != nil {
		return nil, err
	}
	set, err := b.lab.installAllCRDs(ctx, tmpl)
	if err != nil {
		return nil, err
	}
	if err := b.lab.installIdentities(ctx, set, ic.Namespace); err != nil {
		return nil, err
	}
	if ic.Warmup > 0 {
		if _, err := b.idRun(ctx, ic, tmpl, "shared", ic.Warmup, "warm-up"); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	pair := 0
	for _, n := range ic.Points {
		for run := range ic.Runs {
			if err := b.idPair(ctx, ic, rep, tmpl, n, run, pair); err != nil {
				return nil, err
			}
			pair++
		}
	}
	rep.elapsed, rep.loadEnd = time.Since(b.start), loadavg()
	return rep, nil
}

// idPair runs both modes at n, identity first on even pairs, shared first
// on odd ones.
func (b *idBench) idPair(ctx context.Context, ic idConfig, rep *idReport, tmpl string, n, run, pair int) error {
	order := idModes
	if pair%2 == 1 {
		order = []string{idModes[1], idModes[0]}
	}
	for _, mode := range order {
		res, err := b.idRun(ctx, ic, tmpl, mode, n, fmt.Sprintf("identities-%s-%d-run%d", mode, n, run+1))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			res.Err = err.Error()
			b.logf("%s at %d: %v", mode, n, err)
		}
		rep.runs = append(rep.runs, res)
		b.idPartial(rep)
	}
	return nil
}

// idPartial writes the section as measured so far into the document (or
// identities-partial.md of the output directory with BENCH_DOC=-), so that
// a run stopped early leaves the runs it finished.
func (b *idBench) idPartial(rep *idReport) {
	rep.elapsed, rep.loadEnd = time.Since(b.start), loadavg()
	path := b.cfg.Doc
	if path == "-" {
		path = b.cfg.Out + "/identities-partial.md"
		if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
			b.logf("partial report: %v", err)
		}
		return
	}
	if err := replaceSection(path, idTitle, rep.markdown()); err != nil {
		b.logf("partial report: %v", err)
	}
}

// idResult is one run: n CRs of the four kinds in one mode.
type idResult struct {
	Mode, Err   string
	N, Ready    int
	AllReady    time.Duration
	Counts      opStatsDelta
	PeakRSS     uint64
	PeakHeap    uint64
	CPUSeconds  float64
	LoadStart   string
	LoadEnd     string
	DeleteAfter time.Duration
}

// opStatsDelta are the requests of a run, from the synced start until
// settled.
type opStatsDelta struct {
	Reads, Watches, Writes int64
}

func (c opStatsDelta) total() int64 { return c.Reads + c.Watches + c.Writes }

// idRun converges n CRs with one cueop process in mode, then stops it and
// deletes the run's namespaces.
func (b *idBench) idRun(ctx context.Context, ic idConfig, tmpl, mode string, n int, name string) (res idResult, err error) {
	res = idResult{Mode: mode, N: n, LoadStart: loadavg()}
	sp, err := b.lab.spread(ctx, "bench-id-", n, ic.PerNamespace)
	if err != nil {
		return res, err
	}
	defer func() {
		dur, err := b.lab.deleteSpace(ctx, sp)
		res.DeleteAfter = dur
		if err != nil {
			b.logf("%s: delete the namespaces: %v", name, err)
		} else {
			b.logf("%s: namespaces deleted in %.1fs", name, dur.Seconds())
		}
	}()
	if err := b.lab.settingsConfigMaps(ctx, sp); err != nil {
		return res, err
	}
	var extra []string
	if mode == "identity" {
		extra = []string{"-identities", ic.Namespace}
	}
	if os.Getenv("BENCH_ID_HEAP") != "" {
		// The heap profile at the peak of the live heap (heapprofile.go).
		extra = append(extra, "-heapprofile", b.cfg.Out+"/"+name+".peak.heap.pprof")
	}
	b.ops.syncTimeout = 5 * time.Minute
	p, err := b.ops.startOperator(ctx, "cueop", name, "", tmpl, extra...)
	if err != nil {
		return res, err
	}
	defer p.stop()
	err = b.idConverge(ctx, p, sp, &res)
	res.LoadEnd = loadavg()
	return res, err
}

// idConverge creates the n CRs of res, waits until all are Ready and the
// operator settled, and fills res.
func (b *idBench) idConverge(ctx context.Context, p *opProc, sp crSpace, res *idResult) error {
	t, err := b.lab.trackReady(ctx)
	if err != nil {
		return err
	}
	defer t.stop()
	s0 := p.mustStats()
	start := time.Now()
	err = parallel(ctx, res.N, 16, func(ctx context.Context, i int) error {
		k, u := idCR(sp, i)
		_, err := b.lab.dyn.Resource(k.gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	timeout := 10*time.Minute + time.Duration(res.N)*300*time.Millisecond
	allAt, err := waitFor(ctx, timeout, func() bool { return t.readyCount() == res.N })
	res.Ready = t.readyCount()
	measured := func(st opStats) {
		c := st.Counts // every request of the process: its start's lists and watches too
		res.Counts = opStatsDelta{Reads: c.Reads, Watches: c.Watches, Writes: c.Writes}
		res.PeakRSS, res.PeakHeap = uint64(st.MaxRSS), st.PeakHeapInuse
		res.CPUSeconds = st.CPUSeconds - s0.CPUSeconds
	}
	if err != nil {
		measured(p.mustStats())
		return fmt.Errorf("%d of %d CRs Ready: %w (not Ready: %s)", res.Ready, res.N, err, strings.Join(t.notReady(5), ", "))
	}
	res.AllReady = allAt.Sub(start)
	st, err := settle(ctx, p, 2*time.Minute)
	measured(st)
	b.logf("%s at %d: all Ready in %.1fs, %d requests (%.1f per CR), peak RSS %s (render workers %s), peak heap %s",
		res.Mode, res.N, res.AllReady.Seconds(), res.Counts.total(), perCR(res.Counts.total(), res.N), mib(res.PeakRSS),
		mib(uint64(st.WorkerMaxRSS)), mib(res.PeakHeap))
	p.writeHeapProfile(b.cfg.Out)
	return err
}
