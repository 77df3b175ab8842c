package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// opInProcess is cueop with its renders and compiles in its own process
// (--render-isolation=inprocess), run beside cueop with its default
// worker processes to measure what the isolation costs.
const opInProcess = "cueop-inprocess"

// opKind is the -kind of `bench operator` and its extra flags for op.
func opKind(op string) (kind string, extra []string) {
	if op == opInProcess {
		return "cueop", []string{"-render-isolation", "inprocess"}
	}
	return op, nil
}

// workerUsage is the CPU seconds of the render workers this process
// started (the live ones read from /proc, the ended ones from getrusage's
// children) and the peak of their private resident memory (workerMemory).
func workerUsage(mem *workerMemory) (cpuSeconds float64, maxRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err == nil {
		tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
		cpuSeconds = tv(ru.Utime) + tv(ru.Stime)
	}
	for _, pid := range children() {
		cpuSeconds += procCPU(pid)
	}
	return cpuSeconds, mem.peak.Load()
}

// workerMemory samples the private resident memory (RssAnon) of the
// workers, summed, every 100 ms, and keeps its peak. Their file-backed
// pages are the operator's own executable, shared with it (a worker of
// cueop maps 48 MiB of it), so counting their VmHWM would count those
// twice.
type workerMemory struct{ peak atomic.Int64 }

// The workers' pids are looked up again every second only: the lookup
// reads a file per thread of this process, and at 10 lookups a second it
// cost the operator's process 5% of its CPU (and the baseline's, which
// has no workers, 8%), charged to the operator measured. A worker started
// between two lookups is counted from the next one.
func (m *workerMemory) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var pids []int
	for i := 0; ; i++ {
		if i%10 == 0 {
			pids = children()
		}
		var sum int64
		for _, pid := range pids {
			sum += statusBytes(pid, "RssAnon:")
		}
		if sum > m.peak.Load() {
			m.peak.Store(sum)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// children are the pids whose parent is this process, from the children
// files of its threads (/proc/self/task/*/children): a few small reads,
// where scanning every process's stat cost the sampling process 40% of its
// CPU on a busy machine (a bench run's profile: 3,000 CRs, hundreds of
// processes, 10 scans a second).
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return childrenByScan()
	}
	var out []int
	read := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue // the thread ended, or the kernel lacks the file
		}
		read = true
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	if !read {
		return childrenByScan()
	}
	return out
}

// childrenByScan is children from every process's stat, for a kernel
// without the children files.
func childrenByScan() []int {
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == self {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

// statusBytes is a "Vm...:" line of /proc/<pid>/status in bytes, or 0.
func statusBytes(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// isolationTargets are the rows on what the render workers cost: cueop
// with its default worker processes against cueop rendering in process,
// side by side in the runs of smallN CRs.
func (r *report) isolationTargets(p func(string, ...any)) {
	var iso, in *convResult
	for i, c := range r.small {
		switch c.Op {
		case "cueop":
			iso = &r.small[i]
		case opInProcess:
			in = &r.small[i]
		}
	}
	if iso == nil || in == nil {
		return
	}
	n := float64(r.smallN)
	ci, cn := iso.Stats.CPUSeconds/n*1000, in.Stats.CPUSeconds/n*1000
	p("| render workers: CPU per converged CR with %d CRs, workers included (ms; process vs in process) | %.1f (workers %.1f) | %.1f | %.2f | ≤ 1.10 | %s |\n",
		r.smallN, ci, iso.Stats.WorkerCPUSeconds/n*1000, cn, ci/cn, mark(ci/cn <= 1.10))
	ri, rn := float64(iso.Stats.MaxRSS)/(1<<20), float64(in.Stats.MaxRSS)/(1<<20)
	p("| render workers: peak RSS with %d CRs, operator plus workers (MiB; process vs in process) | %.1f (workers %.1f) | %.1f | +%.1f | ≤ +25 MiB | %s |\n",
		r.smallN, ri, float64(iso.Stats.WorkerMaxRSS)/(1<<20), rn, ri-rn, mark(ri-rn <= 25))
}
