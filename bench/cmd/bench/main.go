// Command bench measures cueop side by side with the hand-written operator
// of package baseline, in one run, and rewrites its section of
// docs/benchmarks.md. `make bench` runs it from the module root:
//
//	go run ./bench/cmd/bench
//
// It first runs the Go benchmarks of package bench (cueop's render against
// the hand-written builder), then starts one local control plane
// (localcluster, with kwok nodes) and, on it, alternates the two operators,
// each in a process of its own with a counting transport on its
// rest.Config: N RedisClusters applied at once until all are Ready, in a
// fresh namespace per run, deleted between runs but for each operator's
// last. Then it restarts each operator on the converged CRs of its last run
// (a full resync with a fresh cache) and leaves both idle while the
// retry-storm test of package engine/operator runs beside them; then cueop
// goes through a template edit (hot reload) and both through Pod labels
// edited by hand (drift).
//
// Settings (environment):
//
//	BENCH_N       RedisClusters per run (default 1000)
//	BENCH_RUNS    convergence runs per operator (default 3)
//	BENCH_IDLE    idle period after the resync (default 2m)
//	BENCH_STORM   CUEOP_STORM_DURATION of the retry-storm test run during
//	              the idle period (default 5m; 0 skips it)
//	BENCH_DRIFT   hand edits for drift repair (default 20)
//	BENCH_NODES   kwok nodes (default 10)
//	BENCH_COUNT   -count of the Go benchmarks (default 5; 0 skips them)
//	BENCH_DOC     the file to rewrite (default docs/benchmarks.md; "-" for none)
//	BENCH_OUT     logs and CPU profiles (default bench/out)
//	BENCH_PROFILE CPU profile every operator process (default 1)
//	BENCH_SMALL_N CRs of one more convergence run per operator, at the end,
//	              for peak RSS at a small scale (default 300; 0 skips it)
//
// `bench shards` (make bench-shards, shards.go) and `bench scale` (make
// bench-scale, scale.go) are modes of their own, with sections of their
// own in docs/benchmarks.md, and so is `bench identities` (make
// bench-identities, identities.go: per-kind identities against the shared
// one; BENCH_ID_POINTS, default 300,3000, the CRs of each point);
// BENCH_NODES, BENCH_IDLE, BENCH_DOC and BENCH_OUT mean the same there.
// `bench scale` also reads:
//
//	BENCH_SCALE_POINTS      RedisClusters of each point on one replica
//	                        (default 3000,6000,12000; none: only the
//	                        sharded point)
//	BENCH_SCALE_SHARDS      replicas of the last point, the largest N
//	                        sharded (default 3; 0 skips it)
//	BENCH_SCALE_SHARDED_N   RedisClusters of the sharded point (default:
//	                        the largest of BENCH_SCALE_POINTS; the points
//	                        run smallest first)
//	BENCH_SCALE_GATE        1: kube-apiserver's ShardedListAndWatch gate on
//	                        for the sharded point (default 0: off, each
//	                        replica filters CRs on the client)
//	BENCH_SCALE_PER_NAMESPACE RedisClusters of each namespace (default
//	                        100; 0: all in one): the operators serve every
//	                        namespace then, the shard Leases in the first
//	BENCH_SCALE_TIMEOUT     bound of each wait of a point (default 10m plus
//	                        300ms per CR)
//	BENCH_SCALE_CRDS        unrelated CRDs of the memory-at-start phase
//	                        (default 200; 0 skips it)
//	BENCH_SCALE_CRD_OBJECTS objects of each unrelated CRD (default 50)
//	BENCH_SCALE_PROFILE     1: a CPU profile of each operator process,
//	                        <name>.cpu.pprof in BENCH_OUT (default 0)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/localcluster"
)

// config are the settings of one benchmark run.
type config struct {
	N, Runs, Drift, Nodes, Count int
	Idle, Storm                  time.Duration
	Doc, Out                     string
	Profile                      bool
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fatalf("%s=%q: want a number >= 0", name, v)
		}
		return n
	}
	return def
}

func loadConfig() config {
	c := config{
		N: envInt("BENCH_N", 1000), Runs: envInt("BENCH_RUNS", 3), Drift: envInt("BENCH_DRIFT", 20),
		Nodes: envInt("BENCH_NODES", 10), Count: envInt("BENCH_COUNT", 5),
		Doc: "docs/benchmarks.md", Out: "bench/out", Profile: envInt("BENCH_PROFILE", 1) != 0,
	}
	c.Idle = envDuration("BENCH_IDLE", 2*time.Minute)
	c.Storm = envDuration("BENCH_STORM", 5*time.Minute)
	if v := os.Getenv("BENCH_DOC"); v != "" {
		c.Doc = v
	}
	if v := os.Getenv("BENCH_OUT"); v != "" {
		c.Out = v
	}
	if c.N < 1 || c.Runs < 1 {
		fatalf("BENCH_N and BENCH_RUNS must be at least 1")
	}
	return c
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	if v == "0" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		fatalf("%s=%q: want a duration such as 2m", name, v)
	}
	return d
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	worker.Main() // the operator under test starts this binary as its render worker
	if len(os.Args) > 1 && os.Args[1] == "shards" {
		runShards() // shards.go
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "scale" {
		runScale() // scale.go
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "identities" {
		runIdentities() // identities.go
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "operator" {
		if err := runOperator(os.Args[2:]); err != nil {
			fatalf("operator: %v", err)
		}
		return
	}
	var rep *report
	runSection(loadConfig(), sectionTitle, func(ctx context.Context, s *session) (string, error) {
		var err error
		if rep, err = (&comparison{rig: newRig(s)}).run(ctx); err != nil {
			return "", err
		}
		return rep.markdown(), nil
	})
	if rep.storm != nil && !rep.storm.Passed {
		fatalf("the retry-storm test failed: %s", rep.storm.summary())
	}
}

// runSection runs measure on a session of cfg until Ctrl-C, prints the
// Markdown section titled title it returns and, unless cfg.Doc is "-",
// replaces that section of cfg.Doc with it.
func runSection(cfg config, title string, measure func(context.Context, *session) (string, error)) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		fatalf("%v", err)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &session{cfg: cfg, start: time.Now()}
	md, err := measure(ctx, s)
	if err != nil {
		fatalf("%v (logs in %s)", err, cfg.Out)
	}
	fmt.Println(md)
	if cfg.Doc != "-" {
		if err := replaceSection(cfg.Doc, title, md); err != nil {
			fatalf("%v", err)
		}
		fmt.Printf("bench: wrote %s (section %q) in %s\n", cfg.Doc, title, time.Since(s.start).Round(time.Second))
	}
}

// session is what every part of one bench run shares: its settings, when
// it started (the clock of its log) and its temporary directory (the
// templates copies and webhook directories, removed at the end).
type session struct {
	cfg   config
	start time.Time
	tmp   string
}

// rig is what each mode of the bench measures with: the session, its
// control plane (lab) and the operator processes started on it.
type rig struct {
	*session
	lab *lab
	ops *operators
}

func newRig(s *session) rig {
	l := &lab{session: s}
	return rig{session: s, lab: l, ops: &operators{session: s, lab: l}}
}

// comparison is the default mode: cueop and the baseline side by side
// (convergence runs, resync and idle, hot reload, drift repair).
type comparison struct {
	rig
	// stormBin is the retry-storm test binary, built at the start.
	stormBin string
}

// logf prints progress with the time elapsed since the start.
func (s *session) logf(format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

func (c *comparison) run(ctx context.Context) (*report, error) {
	rep := &report{cfg: c.cfg, started: time.Now()}
	tmp, err := os.MkdirTemp("", "cueop-bench-")
	if err != nil {
		return nil, err
	}
	c.tmp = tmp
	defer os.RemoveAll(tmp)
	rep.machine = machineInfo()
	if err := c.buildStorm(ctx); err != nil {
		return nil, err
	}
	if c.cfg.Count > 0 {
		c.logf("render benchmarks (-count %d)", c.cfg.Count)
		if rep.render, err = runGoBench(ctx, c.cfg.Count); err != nil {
			return nil, err
		}
	}
	c.logf("starting the local control plane (%d kwok nodes)", c.cfg.Nodes)
	stopCluster, err := c.lab.startCluster(ctx, localcluster.Options{
		Nodes: c.cfg.Nodes,
		// Deleting a run's namespace deletes collections of thousands.
		ExtraArgs: map[string][]string{localcluster.KubeAPIServer: {"--delete-collection-workers=8"}},
	})
	if err != nil {
		return nil, err
	}
	defer stopCluster()
	rep.versions = c.lab.versions(ctx)
	if err := c.measure(ctx, rep); err != nil {
		return nil, err
	}
	rep.profiles = c.profiles(rep)
	rep.elapsed = time.Since(c.start)
	return rep, nil
}

// ops are the operators compared, in the order of the even runs.
var ops = []string{"cueop", "baseline"}

// measure runs every phase on the control plane.
func (c *comparison) measure(ctx context.Context, rep *report) error {
	tmpl, err := c.templatesCopy()
	if err != nil {
		return err
	}
	if err := c.lab.installCRD(ctx, tmpl); err != nil {
		return err
	}
	if err := c.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	kept := map[string]*keptRun{}
	defer func() {
		for _, k := range kept {
			k.cr.stop()
		}
	}()
	for run := range c.cfg.Runs {
		order := ops
		if run%2 == 1 {
			order = []string{ops[1], ops[0]}
		}
		for _, op := range order {
			k, err := c.oneRun(ctx, rep, op, run, run == c.cfg.Runs-1)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", op, run+1, err)
			}
			if k != nil {
				kept[op] = k
			}
		}
	}
	if err := c.afterConvergence(ctx, rep, kept); err != nil {
		return err
	}
	return c.smallRuns(ctx, rep)
}

// warmUp converges min(N, 100) CRs with the baseline, unrecorded: the
// first run on a fresh control plane is slower, whichever operator it is.
func (c *comparison) warmUp(ctx context.Context) error {
	ns, err := c.lab.namespace(ctx, "bench-warm-up-")
	if err != nil {
		return err
	}
	p, err := c.ops.startOperator(ctx, "baseline", "warm-up", ns, "")
	if err != nil {
		return err
	}
	defer p.stop()
	cr, err := c.lab.trackCRs(ctx, ns)
	if err != nil {
		return err
	}
	defer cr.stop()
	n := min(c.cfg.N, 100)
	start := time.Now()
	if err := c.lab.createCRs(ctx, ns, n); err != nil {
		return err
	}
	if _, err := waitFor(ctx, 10*time.Minute, func() bool { return cr.readyCount() == n }); err != nil {
		return err
	}
	p.stop()
	c.logf("warm-up: %d CRs Ready in %.1fs", n, time.Since(start).Seconds())
	_, err = c.ops.deleteNamespace(ctx, ns)
	return err
}

// keptRun is an operator's last convergence run, whose converged CRs the
// steady state, hot reload and drift phases reuse.
type keptRun struct {
	ns, tmpl string
	cr       *crTracker
}

// oneRun is one convergence run of op. The namespace is deleted afterwards,
// but for each operator's last run, which is kept for the phases after
// convergence (the other operator's last run thus converges beside these
// idle objects).
func (c *comparison) oneRun(ctx context.Context, rep *report, op string, run int, last bool) (*keptRun, error) {
	ns, err := c.lab.namespace(ctx, fmt.Sprintf("bench-%s-%d-", op, run+1))
	if err != nil {
		return nil, err
	}
	tmpl, err := c.templatesCopy()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-run%d", op, run+1)
	kind, extra := opKind(op)
	p, err := c.ops.startOperator(ctx, kind, name, ns, tmpl, extra...)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	cr, err := c.lab.trackCRs(ctx, ns)
	if err != nil {
		return nil, err
	}
	res, err := c.converge(ctx, p, cr, ns)
	if err != nil {
		cr.stop()
		return nil, err
	}
	res.Op, res.Run, res.Profile = op, run, p.Profile
	p.stop()
	rep.conv = append(rep.conv, res)
	rep.scalable += res.Settle
	c.logf("%s run %d: %d CRs Ready in %.1fs; %.1f writes/CR; peak heap %s",
		op, run+1, c.cfg.N, res.Conv.Seconds(), perCR(res.Counts.Writes, c.cfg.N), mib(res.Stats.PeakHeapInuse))
	if last {
		return &keptRun{ns: ns, tmpl: tmpl, cr: cr}, nil
	}
	cr.stop()
	dur, err := c.ops.deleteNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	rep.deletes = append(rep.deletes, dur)
	rep.scalable += dur
	c.logf("%s run %d: namespace deleted in %.1fs", op, run+1, dur.Seconds())
	return nil, nil
}

// afterConvergence restarts each operator on the converged CRs of its last
// run, one after the other (the full resync), then leaves both idle
// together for the idle period, during which the retry-storm test runs
// beside them (nothing is timed then: the idle period counts requests).
// Hot reload (cueop) and drift repair follow, each operator with the same
// process.
func (c *comparison) afterConvergence(ctx context.Context, rep *report, kept map[string]*keptRun) error {
	procs := map[string]*opProc{}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	steady, err := c.restartAll(ctx, kept, procs)
	if err != nil {
		return err
	}
	if err := c.idle(ctx, rep, steady, procs); err != nil {
		return err
	}
	return c.reloadAndDrift(ctx, rep, kept, procs)
}

// restartAll starts each operator anew on the converged CRs of its last
// run (kept), one after the other, into procs, and waits for each one's
// full resync: the steady results, in the order of ops, their idle period
// begun.
func (c *comparison) restartAll(ctx context.Context, kept map[string]*keptRun, procs map[string]*opProc) ([]*steadyResult, error) {
	var steady []*steadyResult
	for _, op := range ops {
		k := kept[op]
		// Timed from the process's start, as bench-scale times it: each
		// operator's caches synced before the clock would otherwise start
		// for the baseline (its controller registers them before it
		// starts) but not for cueop (its children's informers start once
		// the templates are loaded). The driver's write of the CRD before
		// it (pointing the webhook back after a baseline's run) and the
		// API server's restart of the CRs' storage it causes are not the
		// operator's (startOperator, harness.WaitWatchable).
		p, err := c.ops.startOperator(ctx, op, op+"-steady", k.ns, k.tmpl)
		if err != nil {
			return nil, err
		}
		procs[op] = p
		st, err := c.resync(ctx, p, p.started)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		st.Op = op
		steady = append(steady, st)
		c.logf("%s steady: resync in %.1fs, %d writes, %.0f renders", op, st.Resync.Seconds(), st.ResyncWrites, st.ResyncRenders)
	}
	return steady, nil
}

// idle leaves the operators of procs idle for the idle period, the
// retry-storm test running beside them, and records the storm's result
// and each operator's steady state (steady, in the order of ops).
func (c *comparison) idle(ctx context.Context, rep *report, steady []*steadyResult, procs map[string]*opProc) error {
	idleEnd := time.Now().Add(c.cfg.Idle)
	storm := c.startStorm(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(idleEnd)):
	}
	if storm != nil {
		res := storm.wait()
		rep.storm = &res
		c.logf("retry storm: %s", rep.storm.summary())
	}
	for i, op := range ops {
		st := steady[i]
		st.endIdle(procs[op])
		rep.steady = append(rep.steady, *st)
		rep.scalable += st.Resync
		c.logf("%s steady: %d writes over resync + %s idle", op, st.Counts.Writes, st.Idle.Round(time.Second))
	}
	return nil
}

// reloadAndDrift measures, operator after operator with the processes of
// procs on the CRs of kept, cueop's hot reload and then each one's drift
// repair.
func (c *comparison) reloadAndDrift(ctx context.Context, rep *report, kept map[string]*keptRun, procs map[string]*opProc) error {
	for _, op := range ops {
		k, p := kept[op], procs[op]
		pods, err := c.lab.trackPods(ctx, k.ns)
		if err != nil {
			return err
		}
		defer pods.stop()
		if op == "cueop" {
			rl, err := c.hotReload(ctx, p, k.cr, pods, k.tmpl)
			if err != nil {
				return err
			}
			rep.reload = rl
			rep.scalable += rl.Duration
			c.logf("hot reload: %d CRs at the new revision in %.1fs, min Ready %d", c.cfg.N, rl.Duration.Seconds(), rl.MinReady)
		}
		dr, err := c.drift(ctx, k.ns, pods)
		if err != nil {
			return err
		}
		dr.Op = op
		rep.drift = append(rep.drift, dr)
		c.logf("%s drift: p50 %s p99 %s", op, dr.quantile(0.5), dr.quantile(0.99))
	}
	return nil
}

// templatesCopy copies the RedisCluster kind of ./templates (and the CUE
// module file) into a fresh directory, which one cueop process serves.
func (s *session) templatesCopy() (string, error) {
	dir, err := os.MkdirTemp(s.tmp, "templates-")
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"cue.mod", "rediscluster"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join("templates", sub))); err != nil {
			return "", err
		}
	}
	return filepath.Abs(dir)
}
