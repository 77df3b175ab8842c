package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/localcluster"
)

// sectionTitle is the heading of the section of docs/benchmarks.md this
// command owns; it replaces that section (up to the next "## " heading) and
// leaves every other section alone.
const sectionTitle = "## cueop vs a hand-written operator"

type report struct {
	cfg     config
	started time.Time
	elapsed time.Duration
	// scalable is the part of elapsed that grows with N.
	scalable time.Duration
	machine  string
	versions string
	render   map[string]*benchSamples
	conv     []convResult
	deletes  []time.Duration
	steady   []steadyResult
	storm    *stormResult
	reload   reloadResult
	drift    []driftResult
	profiles string
	// small are the runs with smallN CRs (targets.go).
	small  []convResult
	smallN int
}

func machineInfo() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d CPUs (%s), %s memory, %s/%s, %s; load average %s at the start",
		runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH, runtime.Version(), loadavg())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func (d *driver) versions(ctx context.Context) string {
	server := "?"
	if v, err := d.cs.Discovery().ServerVersion(); err == nil {
		server = v.GitVersion
	}
	mods := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			mods[m.Path] = m.Version
		}
	}
	rev := "?"
	if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("cueop %s; kube-apiserver %s (binaries %s); controller-runtime %s, client-go %s, cuelang.org/go %s",
		rev, server, localcluster.VersionKey, mods["sigs.k8s.io/controller-runtime"], mods["k8s.io/client-go"], mods["cuelang.org/go"])
}

// cpuBucket is a part of an operator's CPU profile: the cumulative time of
// the functions named (by the end of their full names), for cueop and for
// the baseline.
type cpuBucket struct {
	label           string
	cueop, baseline []string
}

var cpuBuckets = []cpuBucket{
	{"reconcile, in all", []string{"engine/reconcile.(*Reconciler).Reconcile"}, []string{"bench/baseline.(*Reconciler).Reconcile"}},
	{"— render: desired children and status", []string{"engine/reconcile.(*renderMemo).render"}, []string{"bench/baseline.Desired", "bench/baseline.ComputeStatus"}},
	{"— no-op decision (is the live child in sync?)", []string{"engine/apply.(*Applier).plan"}, []string{"bench/baseline.PodInSync", "bench/baseline.ServiceInSync", "bench/baseline.ConfigMapInSync"}},
	{"— child applies (requests and responses)", []string{"engine/apply.(*Applier).send"}, []string{"bench/baseline.(*Reconciler).apply"}},
	{"— status writes", []string{"engine/reconcile.(*run).writeStatus"}, []string{"bench/baseline.(*Reconciler).applyStatus"}},
	{"— cache reads", []string{"engine/reconcile.(*run).observe"}, []string{"bench/baseline.(*Reconciler).get", "pkg/cache.(*informerCache).List"}},
	{"watch events decoded (informers)", []string{"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}, []string{"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}},
	{"garbage collection (background marking)", []string{"runtime.gcBgMarkWorker"}, []string{"runtime.gcBgMarkWorker"}},
}

// cumSeconds reads the cumulative seconds of every function of a CPU
// profile and its total, from `go tool pprof -top -cum`.
func cumSeconds(file string) (map[string]float64, float64, error) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=100000", file).Output()
	if err != nil {
		return nil, 0, err
	}
	cum := map[string]float64{}
	total := 0.0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if strings.HasPrefix(l, "Duration:") {
			// Duration: 55.18s, Total samples = 12.35s (22.38%)
			if i := slices.Index(f, "="); i > 0 && i+1 < len(f) {
				total = seconds(f[i+1])
			}
			continue
		}
		if len(f) < 6 || !strings.HasSuffix(f[4], "%") {
			continue
		}
		name := strings.TrimSuffix(strings.Join(f[5:], " "), " (inline)")
		cum[name] += seconds(f[3])
	}
	return cum, total, nil
}

func seconds(s string) float64 {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"s", 1}, {"mins", 60}, {"hrs", 3600}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f * u.scale
			}
		}
	}
	return 0
}

func sumOf(cum map[string]float64, names []string) float64 {
	t := 0.0
	for name, v := range cum {
		for _, n := range names {
			if strings.HasSuffix(name, n) {
				t += v
			}
		}
	}
	return t
}

// profiles tabulates the CPU profiles of the last convergence run of each
// operator: where the CPU time went, in ms per converged CR.
func (d *driver) profiles(rep *report) string {
	last := map[string]string{}
	for _, c := range rep.conv {
		if c.Profile != "" {
			last[c.Op] = c.Profile
		}
	}
	if last["cueop"] == "" || last["baseline"] == "" {
		return ""
	}
	cc, ct, err1 := cumSeconds(last["cueop"])
	bc, bt, err2 := cumSeconds(last["baseline"])
	if err1 != nil || err2 != nil {
		return ""
	}
	n := float64(d.cfg.N) / 1000
	var b strings.Builder
	fmt.Fprintf(&b, "CPU profiles of the last convergence run of each operator (%s, %s; `go tool pprof -top -cum`), in ms of CPU per converged CR and share of the process's samples. The parts overlap only where nested (—).\n\n",
		last["cueop"], last["baseline"])
	b.WriteString("| part | cueop ms/CR | cueop % | baseline ms/CR | baseline % |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| all samples | %.1f | 100 | %.1f | 100 |\n", ct/n, bt/n)
	for _, k := range cpuBuckets {
		c, bb := sumOf(cc, k.cueop), sumOf(bc, k.baseline)
		fmt.Fprintf(&b, "| %s | %.1f | %.0f | %.1f | %.0f |\n", k.label, c/n, 100*c/ct, bb/n, 100*bb/bt)
	}
	b.WriteString("\n")
	return b.String()
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func perCR(n int64, crs int) float64 { return float64(n) / float64(crs) }

func secs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// stat formats the median and spread of xs with format f.
func stat(xs []float64, f string) string {
	if len(xs) == 0 {
		return "n/a"
	}
	lo, hi := spread(xs)
	if len(xs) == 1 || lo == hi {
		return fmt.Sprintf(f, median(xs))
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", median(xs), lo, hi)
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// runs returns the convergence runs of op.
func (r *report) runs(op string) []convResult {
	var out []convResult
	for _, c := range r.conv {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func (r *report) values(op string, f func(convResult) float64) []float64 {
	var out []float64
	for _, c := range r.runs(op) {
		out = append(out, f(c))
	}
	return out
}

// ratios are cueop / baseline of f, run by run.
func (r *report) ratios(f func(convResult) float64) []float64 {
	cu, ba := r.values("cueop", f), r.values("baseline", f)
	var out []float64
	for i := range min(len(cu), len(ba)) {
		if ba[i] != 0 {
			out = append(out, cu[i]/ba[i])
		}
	}
	return out
}

func (r *report) steadyOf(op string) *steadyResult {
	for i := range r.steady {
		if r.steady[i].Op == op {
			return &r.steady[i]
		}
	}
	return nil
}

func (r *report) driftOf(op string) *driftResult {
	for i := range r.drift {
		if r.drift[i].Op == op {
			return &r.drift[i]
		}
	}
	return nil
}

func conv(c convResult) float64 { return c.Conv.Seconds() }

func (r *report) markdown() string {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	n := r.cfg.N
	p("%s\n\n", sectionTitle)
	p("Generated by `make bench` (`go run ./bench/cmd/bench`, see its doc comment for the settings) on %s in %s; the next run rewrites this section.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.elapsed.Round(time.Second))
	p("- Machine: %s, %s at the end. Other engineers build and test on the same machine meanwhile: absolute figures are upper bounds; the ratios compare runs made alternately on the same control plane.\n", r.machine, loadavg())
	p("- Versions: %s.\n", r.versions)
	p("- Setup: N = %d RedisClusters per run (replicas 3: a ConfigMap, a Service and 3 Pods each, %d objects), %d convergence runs per operator, alternating (cueop first in runs 1, 3, ...), each in a fresh namespace deleted afterwards, but for each operator's last run, kept for the phases that follow (so the last run of the second operator converges beside the idle objects of the first's). One local control plane (etcd, kube-apiserver, kube-controller-manager and kube-scheduler at 1000 QPS, kwok with %d nodes). Each operator runs in a process of its own (`bench operator`), scoped to the run's namespace, 4 concurrent reconciles, client QPS 100 / burst 200 (cueop's default when unset, given to the baseline explicitly; controller-runtime's client keeps one token bucket per resource type), a counting RoundTripper on its rest.Config and a CPU profile.\n",
		n, 5*n, r.cfg.Runs, r.cfg.Nodes)
	p("- Baseline: `bench/baseline`, the course chapter's Reconcile done right (typed API, hand-written deep copies, server-side apply of a ConfigMap, a Service and one Pod per index, writes only when the cached object differs, status counted from ready Pods and written only when changed, cache without managedFields, no Events). `TestSameObjects` checks that it builds the same objects as cueop's render (apiVersion, kind, name, namespace, spec, data, the template's labels and the owner reference; the management labels, cueop's `cueop.dev/applied-hash` annotation and the field manager differ by design).\n")
	if n != 1000 {
		est := r.elapsed + time.Duration(float64(r.scalable)*(1000/float64(n)-1))
		verdict := "over the 20 minutes `make bench` must fit in (its engine benchmarks add about 1.5 minutes)"
		if est < 18*time.Minute {
			verdict = "within the 20 minutes `make bench` must fit in at this run's load, but not at the heavier load this shared machine often carries (see the notes below)"
		}
		p("- Why N = %d: this run took %s, of which %s grew with N (convergence, deletion, resync, hot reload); scaled linearly, N = 1000 would have taken about %s, %s. `BENCH_N=1000 make bench` runs it.\n",
			n, r.elapsed.Round(time.Second), r.scalable.Round(time.Second), est.Round(time.Minute), verdict)
	}
	p("\n")

	r.targets(p)
	r.renderSection(p)
	r.convergence(p)
	r.requests(p)
	r.steadySection(p)
	r.memory(p)
	r.reloadSection(p)
	r.driftSection(p)
	r.stormSection(p)
	if r.profiles != "" {
		p("### CPU profiles\n\n%s", r.profiles)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func (r *report) targets(p func(string, ...any)) {
	n := r.cfg.N
	p("### Against the targets\n\n| figure | cueop | baseline | cueop / baseline | target | |\n|---|---|---|---|---|---|\n")
	if s := r.render["BenchmarkRender/cueop/replicas=3"]; s != nil {
		bs := r.render["BenchmarkRender/baseline/replicas=3"]
		c := median(s.NsOp) / 1e6
		p("| render, 3 replicas (ms/op, median) | %.3f | %.3f | %.0f× | cueop ≤ 0.3 ms | %s |\n", c, median(bs.NsOp)/1e6, median(s.NsOp)/median(bs.NsOp), mark(c <= 0.3))
	}
	if ratios := r.ratios(conv); len(ratios) > 0 {
		p("| convergence of %d CRs (s, median of runs) | %.1f | %.1f | %s | ≤ 1.2 | %s |\n", n,
			median(r.values("cueop", conv)), median(r.values("baseline", conv)), stat(ratios, "%.2f"), mark(median(ratios) <= 1.2))
	}
	cs, bs := r.steadyOf("cueop"), r.steadyOf("baseline")
	if cs != nil && bs != nil {
		cw, bw := crWritesOf(cs.Counts), crWritesOf(bs.Counts) // the CRD's CA bundle is no CR's
		p("| writes during resync + %s idle (of CRs and children) | %d | %d | | cueop 0 | %s |\n", min(cs.Idle, bs.Idle).Round(time.Second), cw, bw, mark(cw == 0))
	}
	if cu := r.runs("cueop"); len(cu) > 0 {
		heaps := r.values("cueop", func(c convResult) float64 { return float64(c.Stats.PeakHeapInuse) / (1 << 20) })
		bheaps := r.values("baseline", func(c convResult) float64 { return float64(c.Stats.PeakHeapInuse) / (1 << 20) })
		limit := 150 * float64(n) / 1000
		target := "≤ 150 MiB at 1000 CRs"
		if n != 1000 {
			target += fmt.Sprintf(", scaled: ≤ %.0f MiB at %d", limit, n)
		}
		p("| peak heap in use with %d CRs (MiB, max of runs) | %.1f | %.1f | %.1f | %s | %s |\n",
			n, maxOf(heaps), maxOf(bheaps), maxOf(heaps)/maxOf(bheaps), target, mark(maxOf(heaps) <= limit))
	}
	if r.reload.Duration > 0 {
		p("| hot reload: all %d CRs on the new revision (s); fewest Ready meanwhile | %.1f; %d | n/a | | Ready stays %d | %s |\n",
			n, r.reload.Duration.Seconds(), r.reload.MinReady, n, mark(r.reload.MinReady == n))
	}
	cd, bd := r.driftOf("cueop"), r.driftOf("baseline")
	if cd != nil && bd != nil {
		p("| drift repair p99 (ms, %d edits) | %d | %d | | < 1000 ms | %s |\n", len(cd.Latencies),
			cd.quantile(0.99).Milliseconds(), bd.quantile(0.99).Milliseconds(), mark(cd.quantile(0.99) < time.Second))
	}
	if st := r.storm; st != nil {
		if m := stormFigures.FindStringSubmatch(st.Line); m != nil {
			p("| retry storm: requests while 20 CRs stay stuck for %s | %s | n/a | | ≤ %s (the backoff's bound) | %s |\n", st.Duration, m[1], m[2], mark(st.Passed))
		} else {
			p("| retry storm (%s) | %s | n/a | | test passes | %s |\n", st.Duration, st.Line, mark(st.Passed))
		}
	}
	r.moreTargets(p)
	p("\n")
}

func maxOf(xs []float64) float64 {
	_, hi := spread(xs)
	return hi
}

func (r *report) renderSection(p func(string, ...any)) {
	if r.render == nil {
		p("### Render\n\nNot measured in this run (BENCH_COUNT=0).\n\n")
		return
	}
	p("### Render (Go benchmarks)\n\n`go test -run '^$' -bench '^BenchmarkRender$' -benchmem -count %d ./bench/`, before the control plane starts: one reconcile's pure part for a CR whose Pods are all observed Ready. cueop: `render.Render` of the compiled template (children, status, ready); baseline: `baseline.Desired` (the apply configurations) plus `baseline.ComputeStatus`. Median (min–max) of the %d samples; ratios of the medians of the same `go test` run.\n\n",
		r.cfg.Count, r.cfg.Count)
	p("| replicas | cueop µs/op | baseline µs/op | cueop / baseline | cueop allocs/op | baseline allocs/op | cueop KiB/op | baseline KiB/op |\n|---|---|---|---|---|---|---|---|\n")
	for _, rep := range []int{3, 30} {
		c, bs := r.render[fmt.Sprintf("BenchmarkRender/cueop/replicas=%d", rep)], r.render[fmt.Sprintf("BenchmarkRender/baseline/replicas=%d", rep)]
		if c == nil || bs == nil {
			continue
		}
		us := func(xs []float64) []float64 {
			out := make([]float64, len(xs))
			for i, x := range xs {
				out[i] = x / 1e3
			}
			return out
		}
		p("| %d | %s | %s | %.0f× | %.0f | %.0f | %.0f | %.1f |\n", rep, stat(us(c.NsOp), "%.1f"), stat(us(bs.NsOp), "%.1f"),
			median(c.NsOp)/median(bs.NsOp), median(c.AllocsOp), median(bs.AllocsOp), median(c.BOp)/1024, median(bs.BOp)/1024)
	}
	p("\n")
}

func (r *report) convergence(p func(string, ...any)) {
	cu, ba := r.runs("cueop"), r.runs("baseline")
	if len(cu) == 0 {
		return
	}
	p("### Convergence\n\nTime from the first create of %d RedisClusters (16 clients in parallel) until every one is Ready (Ready=True for its generation, readyReplicas = 3), seen through a watch.\n\n", r.cfg.N)
	p("| run | first | cueop: all created / half Ready / all Ready (s) | baseline: all created / half Ready / all Ready (s) | cueop / baseline |\n|---|---|---|---|---|\n")
	for i := range min(len(cu), len(ba)) {
		first := "cueop"
		if i%2 == 1 {
			first = "baseline"
		}
		p("| %d | %s | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f |\n", i+1, first,
			cu[i].Create.Seconds(), cu[i].Half.Seconds(), cu[i].Conv.Seconds(),
			ba[i].Create.Seconds(), ba[i].Half.Seconds(), ba[i].Conv.Seconds(), cu[i].Conv.Seconds()/ba[i].Conv.Seconds())
	}
	p("| median (min–max) | | %s | %s | %s |\n\n", stat(r.values("cueop", conv), "%.1f"), stat(r.values("baseline", conv), "%.1f"), stat(r.ratios(conv), "%.2f"))
	cpu := func(c convResult) float64 { return c.Stats.CPUSeconds / float64(r.cfg.N) * 1000 }
	p("Operator CPU (process user+system time from its start to the end of the run, profiling included): cueop %s ms per converged CR, baseline %s ms. Deleting a run's namespace took %s s.\n\n",
		stat(r.values("cueop", cpu), "%.1f"), stat(r.values("baseline", cpu), "%.1f"), stat(secs(r.deletes), "%.1f"))
	p("Where the CPU went while the CRs converged (cores used on average from the first create until all were Ready, median of the runs; the machine has %d):\n\n", runtime.NumCPU())
	p("| during the runs of | machine busy | operator | kube-apiserver | etcd | kube-scheduler | kube-controller-manager | kwok |\n|---|---|---|---|---|---|---|---|\n")
	for _, op := range ops {
		core := func(name string) string {
			return stat(r.values(op, func(c convResult) float64 { return c.CPU.Cores[name] }), "%.2f")
		}
		p("| %s | %s%% | %s | %s | %s | %s | %s | %s |\n", op,
			stat(r.values(op, func(c convResult) float64 { return 100 * c.CPU.Machine }), "%.0f"),
			stat(r.values(op, func(c convResult) float64 { return c.OpCores }), "%.2f"),
			core(localcluster.KubeAPIServer), core(localcluster.Etcd), core(localcluster.KubeScheduler),
			core(localcluster.KubeControllerManager), core(localcluster.Kwok))
	}
	p("\n")
	busy := func(c convResult) float64 { return c.CPU.Machine }
	if median(r.values("cueop", busy)) >= 0.9 && median(r.values("baseline", busy)) >= 0.9 {
		p("The machine was saturated while the CRs converged: the times above measure its 2 shared cores (mostly kube-apiserver) as much as either operator; each operator's own cost shows in its CPU per converged CR and in the profiles below.\n\n")
	}
}

func (r *report) requests(p func(string, ...any)) {
	if len(r.conv) == 0 {
		return
	}
	n := float64(r.cfg.N)
	p("### API requests per converged CR\n\nEvery request each operator's clients sent from the first create until the operator settled (all Ready, then no write for 2 s and an empty work queue), divided by N; median (min–max) of the runs.\n\n")
	p("| requests per CR | cueop | baseline |\n|---|---|---|\n")
	row := func(name string, f func(harness.Counts) float64) {
		g := func(op string) string {
			return stat(r.values(op, func(c convResult) float64 { return f(c.Counts) }), "%.2f")
		}
		p("| %s | %s | %s |\n", name, g("cueop"), g("baseline"))
	}
	row("reads (GET, LIST)", func(c harness.Counts) float64 { return float64(c.Reads) / n })
	row("writes", func(c harness.Counts) float64 { return float64(c.Writes) / n })
	keys := map[string]bool{}
	for _, c := range r.conv {
		for k := range c.Counts.WritesBy {
			keys[k] = true
		}
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		row("— "+k, func(c harness.Counts) float64 { return float64(c.WritesBy[k]) / n })
	}
	p("| reconciles per CR (not requests) | %s | %s |\n",
		stat(r.values("cueop", func(c convResult) float64 { return c.Stats.Reconciles / n }), "%.1f"),
		stat(r.values("baseline", func(c convResult) float64 { return c.Stats.Reconciles / n }), "%.1f"))
	p("| watch requests of the whole process (not per CR) | %s | %s |\n\n",
		stat(r.values("cueop", func(c convResult) float64 { return float64(c.Stats.Watches) }), "%.0f"),
		stat(r.values("baseline", func(c convResult) float64 { return float64(c.Stats.Watches) }), "%.0f"))
}

func (r *report) steadySection(p func(string, ...any)) {
	cs, bs := r.steadyOf("cueop"), r.steadyOf("baseline")
	if cs == nil || bs == nil {
		return
	}
	p("### Steady state\n\nAfter the last runs, each operator is restarted on the %d converged CRs of its last run, one after the other: a new process with a fresh cache reconciles every CR (the full resync: reconciles ≥ N and an empty queue; timed from the process's start, its caches' sync included, as `bench-scale` times it). Then both stay idle together for at least %s (BENCH_IDLE), and until the retry-storm test, run meanwhile on a control plane of its own, has ended. Every request of the new process is counted.\n\n", r.cfg.N, r.cfg.Idle)
	p("| | cueop | baseline |\n|---|---|---|\n")
	p("| resync (s) | %.1f | %.1f |\n", cs.Resync.Seconds(), bs.Resync.Seconds())
	p("| idle after the resync | %s | %s |\n", cs.Idle.Round(time.Second), bs.Idle.Round(time.Second))
	p("| reconciles | %.0f | %.0f |\n", cs.Reconciles, bs.Reconciles)
	p("| renders during the resync | %.0f | |\n", cs.ResyncRenders)
	p("| writes during the resync (of CRs and children) | %d | %d |\n", cs.ResyncWrites, bs.ResyncWrites)
	p("| writes during resync + idle | %d%s | %d%s |\n", cs.Counts.Writes, fmtBy(cs.Counts.WritesBy), bs.Counts.Writes, fmtBy(bs.Counts.WritesBy))
	p("| reads (GET, LIST) / watch requests | %d / %d | %d / %d |\n\n", cs.Counts.Reads, cs.Counts.Watches, bs.Counts.Reads, bs.Counts.Watches)
}

var stormFigures = regexp.MustCompile(`: (\d+) requests .*limit (\d+)`)

func (r *report) stormSection(p func(string, ...any)) {
	s := r.storm
	if s == nil {
		return
	}
	verdict := "**failed**"
	if s.Passed {
		verdict = "passed"
	}
	p("### Retry storm (cueop)\n\n`TestNoRetryStorm` of `engine/operator` with `CUEOP_STORM_DURATION=%s` (BENCH_STORM), run during the idle period on a control plane of its own: 10 CRs whose Pods never become ready and 10 whose applies keep failing, held for %s; every request of the operator is counted. It %s in %s: %s.\n\n",
		s.Duration, s.Duration, verdict, s.Elapsed.Round(time.Second), s.Line)
}

func fmtBy(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}

func (r *report) memory(p func(string, ...any)) {
	if len(r.runs("cueop")) == 0 {
		return
	}
	p("### Memory\n\nPeak over each convergence run (a fresh process per run), sampled every 100 ms from runtime/metrics (HeapInuse as runtime.MemStats defines it; HeapAlloc); peak RSS is the process's VmHWM. Median (min–max) of the runs.\n\n")
	p("| | cueop | baseline |\n|---|---|---|\n")
	row := func(name string, f func(convResult) float64) {
		p("| %s | %s | %s |\n", name, stat(r.values("cueop", f), "%.1f"), stat(r.values("baseline", f), "%.1f"))
	}
	row("peak heap in use (MiB)", func(c convResult) float64 { return float64(c.Stats.PeakHeapInuse) / (1 << 20) })
	row("peak heap allocated (MiB)", func(c convResult) float64 { return float64(c.Stats.PeakHeapAlloc) / (1 << 20) })
	row("heap in use at the end, settled (MiB)", func(c convResult) float64 { return float64(c.Stats.HeapInuse) / (1 << 20) })
	row("peak RSS, VmHWM (MiB)", func(c convResult) float64 { return float64(c.Stats.MaxRSS) / (1 << 20) })
	if cs, bs := r.steadyOf("cueop"), r.steadyOf("baseline"); cs != nil && bs != nil {
		p("| steady-state process (resync, idle, hot reload, drift): peak heap in use / VmHWM (MiB) | %.1f / %.1f | %.1f / %.1f |\n",
			float64(cs.Stats.PeakHeapInuse)/(1<<20), float64(cs.Stats.MaxRSS)/(1<<20), float64(bs.Stats.PeakHeapInuse)/(1<<20), float64(bs.Stats.MaxRSS)/(1<<20))
	}
	p("\n")
}

func (r *report) reloadSection(p func(string, ...any)) {
	rl := r.reload
	if rl.Duration == 0 {
		return
	}
	p("### Hot reload (cueop)\n\nWith the %d converged CRs, the served template is edited (a copy of templates/rediscluster/rediscluster.cue: every Pod gets the label `%s: v1`, renamed into place as an editor saves). Timed from the rename until every CR's status.revision is the new revision (%s) with Reconciling=False and every Pod carries the label.\n\n", r.cfg.N, reloadLabel, rl.Revision)
	p("| every Pod relabelled (s) | every CR converged (s) | fewest Ready CRs meanwhile | writes per CR |\n|---|---|---|---|\n")
	p("| %.1f | %.1f | %d of %d | %.2f%s |\n\n", rl.PodsDone.Seconds(), rl.Duration.Seconds(), rl.MinReady, r.cfg.N, perCR(rl.Counts.Writes, r.cfg.N), fmtBy(rl.Counts.WritesBy))
}

func (r *report) driftSection(p func(string, ...any)) {
	if len(r.drift) == 0 {
		return
	}
	p("### Drift repair\n\nA label each operator owns (`app`) edited on one Pod at a time by another field manager (a merge patch, as `kubectl label --overwrite` sends); timed from the edit until the driver's watch shows the operator's value again at a later resourceVersion.\n\n")
	p("| | edits | p50 (ms) | p99 (ms) | max (ms) |\n|---|---|---|---|---|\n")
	for _, d := range r.drift {
		p("| %s | %d | %.0f | %.0f | %.0f |\n", d.Op, len(d.Latencies), ms(d.quantile(0.5)), ms(d.quantile(0.99)), ms(d.quantile(1)))
	}
	p("\n")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeSection replaces the section titled sectionTitle in the Markdown file
// path (from its heading to the next "## " heading or the end), or appends
// it; the rest of the file is kept as it is.
func writeSection(path, section string) error {
	return replaceSection(path, sectionTitle, section)
}

// replaceSection replaces the section titled title in the Markdown file
// path (from its heading to the next "## " heading or the end), or appends
// it.
func replaceSection(path, title, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	lines := strings.SplitAfter(string(old), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimRight(l, "\n")
		if start < 0 && t == title {
			start = i
		} else if start >= 0 && strings.HasPrefix(t, "## ") {
			end = i
			break
		}
	}
	var out string
	if start < 0 {
		out = strings.TrimRight(string(old), "\n") + "\n\n" + section
	} else {
		rest := strings.Join(lines[end:], "")
		if rest != "" {
			section += "\n"
		}
		out = strings.Join(lines[:start], "") + section + rest
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
