package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A stage is a part of an operator's CPU: the cumulative time of the
// functions named (by the end of their full names) in the operator's
// profile, for cueop and for the baseline, or in the render workers'
// profiles (cueop only).
type stage struct {
	label           string
	cueop, baseline []string
	workers         bool
}

// stages are the rows of the profile table, in its order. The parts
// overlap only where nested (—).
var stages = []stage{
	{label: "reconcile, in all", cueop: []string{"engine/reconcile.(*Reconciler).Reconcile"}, baseline: []string{"bench/baseline.(*Reconciler).Reconcile"}},
	{label: "— render, the operator's side: inputs, digest and memo, the request sent", cueop: []string{"engine/reconcile.(*run).render"}, baseline: []string{"bench/baseline.Desired", "bench/baseline.ComputeStatus"}},
	{label: "— no-op decision (is the live child in sync?)", cueop: []string{"engine/apply.(*Applier).plan"}, baseline: []string{"bench/baseline.PodInSync", "bench/baseline.ServiceInSync", "bench/baseline.ConfigMapInSync"}},
	{label: "— child applies: server-side apply encoded, sent, answered", cueop: []string{"engine/apply.(*Applier).send"}, baseline: []string{"bench/baseline.(*Reconciler).apply"}},
	{label: "— status: computed and written", cueop: []string{"engine/reconcile.(*run).writeStatus"}, baseline: []string{"bench/baseline.(*Reconciler).applyStatus"}},
	{label: "— cache reads", cueop: []string{"engine/reconcile.(*run).observe"}, baseline: []string{"bench/baseline.(*Reconciler).get", "pkg/cache.(*informerCache).List"}},
	{label: "— Events recorded", cueop: []string{"engine/reconcile.(*run).emitEvents"}},
	{label: "render answers read from the workers (framing, decode)", cueop: []string{"engine/worker.(*proc).send.func2"}},
	{label: "Events sent (the recorder's goroutine)", cueop: []string{"tools/record.(*eventBroadcasterImpl).StartEventWatcher.func1"}, baseline: []string{"tools/record.(*eventBroadcasterImpl).StartEventWatcher.func1"}},
	{label: "conversion webhook: reviews served (the handler; TLS and HTTP/2 around it not included)", cueop: []string{"engine/webhook.(*Handler).ServeHTTP"}},
	{label: "watch events decoded (informers)", cueop: []string{"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}, baseline: []string{"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}},
	{label: "client connections: TLS records and HTTP/2 frames read", cueop: []string{"golang.org/x/net/http2.(*ClientConn).readLoop"}, baseline: []string{"golang.org/x/net/http2.(*ClientConn).readLoop"}},
	{label: "cache: events into the informers' stores and handlers", cueop: []string{"tools/cache.(*processorListener).run", "tools/cache.(*controller).processLoop"}, baseline: []string{"tools/cache.(*processorListener).run", "tools/cache.(*controller).processLoop"}},
	{label: "collectors: metrics gathered", cueop: []string{"prometheus.(*Registry).Gather"}, baseline: []string{"prometheus.(*Registry).Gather"}},
	{label: "garbage collection (background marking)", cueop: []string{"runtime.gcBgMarkWorker"}, baseline: []string{"runtime.gcBgMarkWorker"}},
	{label: "**render workers, in all** (their own profiles, summed)", workers: true},
	{label: "— CUE evaluation of a render (fill, unify, export)", cueop: []string{"engine/render.evaluate"}, workers: true},
	{label: "— framing and copies (decode the request, encode the answer)", cueop: []string{"engine/worker.readMessage", "engine/worker.(*server).send", "engine/worker.renderResponse"}, workers: true},
	{label: "— compiles of the template", cueop: []string{"engine/worker.(*server).kind", "engine/worker.(*server).compile"}, workers: true},
	{label: "— garbage collection (background marking)", cueop: []string{"runtime.gcBgMarkWorker"}, workers: true},
}

// workerProfileDir is where the render workers of the operator profiled
// into file write their own profiles (CUEOP_WORKER_CPUPROFILE).
func workerProfileDir(file string) string {
	return strings.TrimSuffix(file, ".cpu.pprof") + ".workers"
}

// cumSeconds reads the cumulative seconds of every function of the CPU
// profiles files, merged, and their total, from `go tool pprof -top -cum`.
func cumSeconds(files ...string) (map[string]float64, float64, error) {
	args := append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=100000"}, files...)
	out, err := exec.Command("go", args...).Output()
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

// profile is one operator's CPU profile read by stage: the operator's
// process and its render workers.
type profile struct {
	op, workers           map[string]float64
	opTotal, workersTotal float64
	workerFiles           int
}

func readProfile(file string) (*profile, error) {
	p := &profile{}
	var err error
	if p.op, p.opTotal, err = cumSeconds(file); err != nil {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(workerProfileDir(file), "*.cpu.pprof"))
	if len(files) > 0 {
		if p.workers, p.workersTotal, err = cumSeconds(files...); err != nil {
			return nil, err
		}
		p.workerFiles = len(files)
	}
	return p, nil
}

// seconds is a stage's cumulative time in p; the workers' total for the
// row of the workers in all.
func (p *profile) seconds(s stage, names []string) float64 {
	switch {
	case !s.workers:
		return sumOf(p.op, names)
	case names == nil:
		return p.workersTotal
	}
	return sumOf(p.workers, names)
}

// profiles tabulates the CPU profiles of the last convergence run of each
// operator, its render workers' included: where the CPU time went, in ms
// per converged CR.
func (c *comparison) profiles(rep *report) string {
	last := map[string]string{}
	for _, c := range rep.conv {
		if c.Profile != "" {
			last[c.Op] = c.Profile
		}
	}
	if last["cueop"] == "" || last["baseline"] == "" {
		return ""
	}
	cp, err1 := readProfile(last["cueop"])
	bp, err2 := readProfile(last["baseline"])
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "bench: profiles: %v %v\n", err1, err2)
		return ""
	}
	return profileTable(cp, bp, last, float64(c.cfg.N)/1000)
}

// profileTable writes the table of cp and bp, in ms per CR of n thousand
// CRs and in shares of all the samples of the operator and its workers.
func profileTable(cp, bp *profile, files map[string]string, n float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU profiles of the last convergence run of each operator (%s, %s; cueop's render workers: %d profiles in %s; `go tool pprof -top -cum`), in ms of CPU per converged CR and share of all the samples of the operator and its workers. The parts overlap only where nested (—).\n\n",
		files["cueop"], files["baseline"], cp.workerFiles, workerProfileDir(files["cueop"]))
	b.WriteString("| part | cueop ms/CR | cueop % | baseline ms/CR | baseline % |\n|---|---|---|---|---|\n")
	ct, bt := cp.opTotal+cp.workersTotal, bp.opTotal
	fmt.Fprintf(&b, "| all samples, workers included | %.1f | 100 | %.1f | 100 |\n", ct/n, bt/n)
	fmt.Fprintf(&b, "| **the operator's process** | %.1f | %.0f | %.1f | 100 |\n", cp.opTotal/n, 100*cp.opTotal/ct, bt/n)
	for _, s := range stages {
		c := cp.seconds(s, s.cueop)
		bb := "| | "
		if !s.workers {
			v := bp.seconds(s, s.baseline)
			bb = fmt.Sprintf("| %.1f | %.0f ", v/n, 100*v/bt)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.0f %s|\n", s.label, c/n, 100*c/ct, bb)
	}
	b.WriteString("\n")
	return b.String()
}
