package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cueop/cueop/engine/template"
)

// Defaults of a Pool.
const (
	// DefaultWorkers is how many workers may run at once.
	DefaultWorkers = 2
	// DefaultMemory is each worker's memory limit.
	DefaultMemory = 512 << 20
	// DefaultSpawnAfter is how long every running worker must have been
	// busy with its current evaluation before a request that waits starts
	// another worker.
	DefaultSpawnAfter = 50 * time.Millisecond
)

// Options configure a Pool.
type Options struct {
	// Workers bounds the workers running at once; 0 means DefaultWorkers.
	Workers int
	// Memory is each worker's memory limit in bytes (address space above
	// what it maps at start, and resident memory); 0 means DefaultMemory,
	// a negative value no limit.
	Memory int64
	// SpawnAfter: 0 means DefaultSpawnAfter.
	SpawnAfter time.Duration
	// Limits bound the template files a worker reads, as the operator's
	// loads do.
	Limits template.Limits
	// Command returns the command of a new worker; nil means this
	// executable with the argument "worker" (see Main).
	Command func() (*exec.Cmd, error)
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.SpawnAfter <= 0 {
		o.SpawnAfter = DefaultSpawnAfter
	}
	if o.Command == nil {
		o.Command = selfCommand
	}
	return o
}

// selfCommand runs this executable as a worker.
func selfCommand() (*exec.Cmd, error) {
	if !selfServes.Load() {
		return nil, errors.New("this program cannot serve as a render worker (worker.Main was not called in its main or TestMain)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, "worker"), nil
}

// Pool runs evaluations in worker processes, started on demand, one
// evaluation per worker at a time. Each tenant (the CR's namespace; the
// templates' compiles are one more) may hold at most Workers-1 of the
// workers at once (at least one), so another tenant always finds one; the
// requests that wait are served round robin by tenant.
type Pool struct {
	opts Options

	mu      sync.Mutex
	idle    []*proc
	busy    map[*proc]busyWorker
	running map[string]int // evaluations by tenant
	procs   int            // running or starting
	waiting fairQueue
	timer   bool // a spawn check is scheduled
	closed  bool // Close was called: a worker no request waits for ends

	started, killed atomic.Int64
}

type busyWorker struct {
	tenant string
	since  time.Time
}

// New returns a pool; no worker starts until the first request.
func New(opts Options) *Pool {
	return &Pool{opts: opts.withDefaults(), busy: map[*proc]busyWorker{}, running: map[string]int{}}
}

// Stats are how many workers the pool started and killed.
func (p *Pool) Stats() (started, killed int64) { return p.started.Load(), p.killed.Load() }

// Close ends the idle workers; busy ones end when their evaluation does.
// A request made after Close is still served, by a worker that ends with
// its evaluation. Close waits a moment (closeWait) for the idle ones to exit, so that
// what they write as they end (a CPU profile, profile.go) is complete.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	for _, w := range idle {
		w.close()
		p.procs--
	}
	p.idle = nil
	p.mu.Unlock()
	deadline := time.After(closeWait)
	for _, w := range idle {
		select {
		case <-w.done:
		case <-deadline:
			return
		}
	}
}

// closeWait bounds how long Close waits for the idle workers to exit.
const closeWait = 2 * time.Second

// start starts a worker and waits for its hello.
func (p *Pool) start() (*proc, error) {
	cmd, err := p.opts.Command()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), envWorker+"="+strconv.FormatInt(max(p.opts.Memory, 0), 10))
	w, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("render worker: %w", err)
	}
	p.started.Add(1)
	return w, nil
}

// share is how many workers one tenant may hold at once.
func (p *Pool) share() int { return max(1, p.opts.Workers-1) }

// Busy refuses an evaluation of a tenant whose share of the workers is
// held by evaluations that have run for a while: the caller retries later
// rather than wait (and hold its own caller's slot) behind them.
type Busy struct {
	Tenant  string
	Running int
}

// Transient: a retry a moment later will do (engine/reconcile writes no
// status for it at first).
func (e *Busy) Transient() bool { return true }

func (e *Busy) Error() string {
	return fmt.Sprintf("namespace %s: its %d evaluations in progress hold its share of the render workers; this one waits its turn", e.Tenant, e.Running)
}

// acquire returns a worker for one evaluation of tenant.
func (p *Pool) acquire(ctx context.Context, tenant string) (*proc, error) {
	p.mu.Lock()
	if n := p.running[tenant]; n >= p.share() {
		if p.slowLocked(tenant) && !waitsTurn(ctx) { // convert.go
			p.mu.Unlock()
			return nil, &Busy{Tenant: tenant, Running: n}
		}
	} else if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.takeLocked(w, tenant)
		p.mu.Unlock()
		return w, nil
	} else if p.procs == 0 {
		p.procs++
		p.mu.Unlock()
		return p.startBusy(tenant)
	}
	ch := make(chan *proc, 1)
	p.waiting.push(tenant, ch)
	p.scheduleSpawnLocked()
	p.mu.Unlock()
	select {
	case w := <-ch:
		return w, nil
	case <-ctx.Done():
		p.mu.Lock()
		removed := p.waiting.remove(tenant, ch)
		p.mu.Unlock()
		if !removed {
			p.release(<-ch, true)
		}
		return nil, ctx.Err()
	}
}

// slowLocked tells whether every evaluation of tenant has run for
// SpawnAfter: a slow one, not a burst of quick ones.
func (p *Pool) slowLocked(tenant string) bool {
	for _, b := range p.busy {
		if b.tenant == tenant && time.Since(b.since) < p.opts.SpawnAfter {
			return false
		}
	}
	return true
}

func (p *Pool) takeLocked(w *proc, tenant string) {
	p.busy[w] = busyWorker{tenant: tenant, since: time.Now()}
	p.running[tenant]++
}

// startBusy starts a worker counted in procs, for tenant ("" for none
// yet).
func (p *Pool) startBusy(tenant string) (*proc, error) {
	w, err := p.start()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.procs--
		return nil, err
	}
	if tenant != "" {
		p.takeLocked(w, tenant)
	}
	return w, nil
}

// scheduleSpawnLocked checks, SpawnAfter from now, whether waiting
// requests should get a worker of their own.
func (p *Pool) scheduleSpawnLocked() {
	if p.timer || p.procs >= p.opts.Workers {
		return
	}
	p.timer = true
	time.AfterFunc(p.opts.SpawnAfter, p.maybeSpawn)
}

// maybeSpawn starts a worker when requests that may run wait and every
// worker has been busy with its evaluation for SpawnAfter: a slow
// evaluation does not hold the others back longer than that, while a burst
// of quick ones shares the running workers.
func (p *Pool) maybeSpawn() {
	p.mu.Lock()
	p.timer = false
	if p.waiting.peek(p.eligible) == "" || p.procs >= p.opts.Workers {
		p.mu.Unlock()
		return
	}
	starting := len(p.busy) == 0 // the running ones are still starting
	for _, b := range p.busy {
		if starting || time.Since(b.since) < p.opts.SpawnAfter {
			p.scheduleSpawnLocked()
			p.mu.Unlock()
			return
		}
	}
	p.procs++
	p.mu.Unlock()
	p.spawnForWaiters()
}

func (p *Pool) eligible(tenant string) bool { return p.running[tenant] < p.share() }

// spawnForWaiters starts a worker counted in procs and gives it to the
// next waiting request.
func (p *Pool) spawnForWaiters() {
	w, err := p.startBusy("")
	if err != nil {
		return // the waiting requests keep waiting for the running workers
	}
	p.mu.Lock()
	p.handLocked(w)
	p.mu.Unlock()
}

// release gives w back: to the next waiting request, round robin by
// tenant, or to the idle workers. A worker that is not ok (dead, killed,
// or left with an abandoned evaluation) is ended, and replaced when
// requests wait.
func (p *Pool) release(w *proc, ok bool) {
	p.mu.Lock()
	if b, busy := p.busy[w]; busy {
		delete(p.busy, w)
		if p.running[b.tenant]--; p.running[b.tenant] <= 0 {
			delete(p.running, b.tenant)
		}
	}
	if ok {
		p.handLocked(w)
		p.mu.Unlock()
		return
	}
	w.kill()
	p.procs--
	spawn := p.waiting.peek(p.eligible) != "" && p.procs < p.opts.Workers
	if spawn {
		p.procs++
	}
	p.mu.Unlock()
	if spawn {
		go p.spawnForWaiters()
	}
}

// handLocked gives the idle worker w to the next request that may run,
// or keeps it idle; once the pool is closed, it ends.
func (p *Pool) handLocked(w *proc) {
	if tenant, ch := p.waiting.next(p.eligible); ch != nil {
		p.takeLocked(w, tenant)
		ch <- w
		return
	}
	if p.closed {
		w.close()
		p.procs--
		return
	}
	p.idle = append(p.idle, w)
}

// fairQueue holds waiting requests by tenant and serves the tenants in
// turn, each tenant's requests in order.
type fairQueue struct {
	tenants []string // with waiting requests, in turn order
	q       map[string][]chan *proc
}

func (f *fairQueue) push(tenant string, ch chan *proc) {
	if f.q == nil {
		f.q = map[string][]chan *proc{}
	}
	if len(f.q[tenant]) == 0 {
		f.tenants = append(f.tenants, tenant)
	}
	f.q[tenant] = append(f.q[tenant], ch)
}

// next takes the first request of the first tenant, in turn order, that
// may run, and moves that tenant to the end of the turn order.
func (f *fairQueue) next(may func(string) bool) (string, chan *proc) {
	for i, t := range f.tenants {
		if !may(t) {
			continue
		}
		f.tenants = append(f.tenants[:i:i], f.tenants[i+1:]...)
		ch := f.q[t][0]
		f.q[t] = f.q[t][1:]
		if len(f.q[t]) > 0 {
			f.tenants = append(f.tenants, t)
		} else {
			delete(f.q, t)
		}
		return t, ch
	}
	return "", nil
}

// peek is the tenant next would serve, or "".
func (f *fairQueue) peek(may func(string) bool) string {
	for _, t := range f.tenants {
		if may(t) {
			return t
		}
	}
	return ""
}

func (f *fairQueue) remove(tenant string, ch chan *proc) bool {
	q := f.q[tenant]
	for i, c := range q {
		if c != ch {
			continue
		}
		f.q[tenant] = append(q[:i:i], q[i+1:]...)
		if len(f.q[tenant]) == 0 {
			delete(f.q, tenant)
			for j, t := range f.tenants {
				if t == tenant {
					f.tenants = append(f.tenants[:j:j], f.tenants[j+1:]...)
					break
				}
			}
		}
		return true
	}
	return false
}

// CPU is the CPU time the pool's running workers have used, for
// benchmarks that count the workers' share of the operator's cost.
func (p *Pool) CPU() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var total time.Duration
	for _, w := range p.idle {
		total += w.cpu()
	}
	for w := range p.busy {
		total += w.cpu()
	}
	return total
}
