package budget

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults: a render of a shipped kind at the API server's limits fits
// them several times over (engine/golden
// TestWebAppAtAPIServerLimitsFitsDefaultBudget; the figures are in
// docs/benchmarks.md).
const (
	DefaultTime         = time.Second
	DefaultMemory       = 128 << 20
	DefaultMaxAbandoned = 2
)

// WallFactor bounds the wall-clock time of an evaluation to this many times
// its CPU budget: an evaluation starved of CPU (a loaded machine, many
// evaluations at once) is not charged for the wait, but the caller does not
// wait forever either.
const WallFactor = 10

// Budget bounds one evaluation. The zero value is the defaults.
type Budget struct {
	// Time is the CPU time an evaluation may use (and WallFactor times it
	// the wall-clock time it may take); 0 means DefaultTime, a negative
	// value no limit.
	Time time.Duration
	// Memory is the bytes an evaluation may allocate; 0 means
	// DefaultMemory, a negative value no limit.
	Memory int64
	// MaxAbandoned is how many evaluations of one key that ran out of
	// budget may still be running before Run refuses new ones of that key;
	// 0 means DefaultMaxAbandoned.
	MaxAbandoned int
}

// WithDefaults fills the zero fields.
func (b Budget) WithDefaults() Budget {
	if b.Time == 0 {
		b.Time = DefaultTime
	}
	if b.Memory == 0 {
		b.Memory = DefaultMemory
	}
	if b.MaxAbandoned == 0 {
		b.MaxAbandoned = DefaultMaxAbandoned
	}
	return b
}

// Scale returns b with its time and memory multiplied by n.
func (b Budget) Scale(n int) Budget {
	b = b.WithDefaults()
	if b.Time > 0 {
		b.Time *= time.Duration(n)
	}
	if b.Memory > 0 {
		b.Memory *= int64(n)
	}
	return b
}

// String reads "1s of CPU, 128.0 MiB".
func (b Budget) String() string {
	b = b.WithDefaults()
	t, m := "no time limit", "no memory limit"
	if b.Time > 0 {
		t = b.Time.String() + " of CPU"
	}
	if b.Memory > 0 {
		m = MiB(b.Memory)
	}
	return t + ", " + m
}

// MiB formats a byte count.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Exceeded is an evaluation stopped waiting for because it ran out of
// budget. The evaluation itself runs on, abandoned.
type Exceeded struct {
	Key    string
	Budget Budget
	// Limit is "cpu", "wall" or "memory".
	Limit string
	// Elapsed, CPU and Allocated are what the evaluation had used when it
	// was abandoned.
	Elapsed   time.Duration
	CPU       time.Duration
	Allocated int64
	// Phase is what the evaluation was doing, as it last said (Tracker).
	Phase string
}

func (e *Exceeded) Error() string {
	var used string
	switch e.Limit {
	case "memory":
		used = fmt.Sprintf("allocated %s", MiB(e.Allocated))
	case "cpu":
		used = fmt.Sprintf("used %s of CPU", e.CPU.Round(time.Millisecond))
	default:
		used = fmt.Sprintf("ran %s (wall clock, %s of CPU)", e.Elapsed.Round(time.Millisecond), e.CPU.Round(time.Millisecond))
	}
	msg := fmt.Sprintf("evaluation budget exceeded: %s (budget %s)", used, e.Budget)
	if e.Phase != "" {
		msg += " while evaluating " + e.Phase
	}
	return msg
}

// Busy refuses an evaluation of a key that has too many abandoned
// evaluations still running.
type Busy struct {
	Key       string
	Abandoned int
}

func (e *Busy) Error() string {
	return fmt.Sprintf("%s: %d earlier evaluations that exceeded their budget are still running; new ones wait until one ends", e.Key, e.Abandoned)
}

// Tracker lets an evaluation say what it is evaluating, so that an
// Exceeded names it. A nil Tracker does nothing.
type Tracker struct {
	phase atomic.Pointer[string]
}

// Phase records what the evaluation is about to evaluate.
func (t *Tracker) Phase(s string) {
	if t != nil {
		t.phase.Store(&s)
	}
}

func (t *Tracker) current() string {
	if p := t.phase.Load(); p != nil {
		return *p
	}
	return ""
}

// Run runs f within b. It returns f's error, an *Exceeded when b ran out
// first (f goes on running, abandoned), or a *Busy when b.MaxAbandoned
// evaluations of key are still running abandoned. A panic in f is returned
// as an error.
func (b Budget) Run(key string, f func(*Tracker) error) error {
	b = b.WithDefaults()
	e, err := start(key, b)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%s: evaluation panicked: %v", key, r)
			}
			w.finish(e)
			done <- err
		}()
		err = f(&e.tracker)
	}()
	var timeout <-chan time.Time
	if b.Time > 0 {
		t := time.NewTimer(b.Time * WallFactor)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case err := <-done:
		if limit := e.over(); limit != "" {
			// It ended, but over budget: the last of it came after the
			// last tick. The verdict must not depend on the timing.
			return e.exceeded(limit)
		}
		return err
	case <-timeout:
		return w.abandon(e, "wall")
	case <-e.tripped:
		return w.abandon(e, "")
	}
}

// Abandoned returns how many abandoned evaluations of key are running.
func Abandoned(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abandoned[key]
}

// WaitAbandoned waits until at most n abandoned evaluations of key are
// still running, woken each time one ends, or until ctx ends. It returns
// how many are left.
func WaitAbandoned(ctx context.Context, key string, n int) int {
	for {
		w.mu.Lock()
		left, ended := w.abandoned[key], w.ended
		w.mu.Unlock()
		if left <= n {
			return left
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return Abandoned(key)
		}
	}
}

// eval is one running evaluation.
type eval struct {
	key       string
	budget    Budget
	start     time.Time
	allocated int64         // guarded by w.mu
	cpu       time.Duration // guarded by w.mu
	abandoned bool          // guarded by w.mu
	tripped   chan struct{}
	tripOnce  sync.Once
	tracker   Tracker
}

// over returns the limit e is over, or "". The caller holds w.mu or e has
// ended.
func (e *eval) over() string {
	switch {
	case e.budget.Memory > 0 && e.allocated > e.budget.Memory:
		return "memory"
	case e.budget.Time > 0 && e.cpu > e.budget.Time:
		return "cpu"
	}
	return ""
}

func (e *eval) exceeded(limit string) *Exceeded {
	return &Exceeded{Key: e.key, Budget: e.budget, Limit: limit, Elapsed: time.Since(e.start), CPU: e.cpu, Allocated: e.allocated, Phase: e.tracker.current()}
}

// watchdog charges allocations and CPU time to the running evaluations.
type watchdog struct {
	mu        sync.Mutex
	running   map[*eval]bool
	abandoned map[string]int
	ended     chan struct{} // closed, and replaced, when an abandoned evaluation ends
	last      uint64        // heap bytes allocated, at the last tick
	lastCPU   time.Duration // process CPU time, at the last tick
	wake      chan struct{}
	sample    []metrics.Sample
}

var w = newWatchdog()

func newWatchdog() *watchdog {
	d := &watchdog{
		running: map[*eval]bool{}, abandoned: map[string]int{}, ended: make(chan struct{}), wake: make(chan struct{}, 1),
		sample: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}},
	}
	go d.loop()
	return d
}

// tick is how often allocations are read while evaluations run.
const tick = 5 * time.Millisecond

func start(key string, b Budget) (*eval, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.abandoned[key]; n >= b.MaxAbandoned {
		return nil, &Busy{Key: key, Abandoned: n}
	}
	e := &eval{key: key, budget: b, start: time.Now(), tripped: make(chan struct{})}
	if len(w.running) == 0 {
		w.last, w.lastCPU = w.allocs(), processCPU()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	w.running[e] = true
	return e, nil
}

// finish charges the allocations since the last tick, then forgets e.
func (d *watchdog) finish(e *eval) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.chargeLocked()
	delete(d.running, e)
	if e.abandoned {
		d.abandoned[e.key]--
		if d.abandoned[e.key] == 0 {
			delete(d.abandoned, e.key)
		}
		close(d.ended)
		d.ended = make(chan struct{})
	}
}

// abandon gives e up; limit "" means the limit e is over.
func (d *watchdog) abandon(e *eval, limit string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if limit == "" {
		limit = e.over()
	}
	if d.running[e] {
		e.abandoned = true
		d.abandoned[e.key]++
	} // else it ended as the budget ran out: nothing is left running
	return e.exceeded(limit)
}

func (d *watchdog) allocs() uint64 {
	metrics.Read(d.sample)
	return d.sample[0].Value.Uint64()
}

func (d *watchdog) loop() {
	for range d.wake {
		t := time.NewTicker(tick)
		for range t.C {
			if !d.charge() {
				break
			}
		}
		t.Stop()
	}
}

// charge shares the bytes allocated since the last tick among the running
// evaluations and trips those over budget. It is false when none runs.
func (d *watchdog) charge() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.running) == 0 {
		return false
	}
	d.chargeLocked()
	return true
}

func (d *watchdog) chargeLocked() {
	now, cpu := d.allocs(), processCPU()
	n := len(d.running)
	share, cpuShare := int64(now-d.last)/int64(n), (cpu-d.lastCPU)/time.Duration(n)
	d.last, d.lastCPU = now, cpu
	for e := range d.running {
		e.allocated += share
		e.cpu += cpuShare
		if !e.abandoned && e.over() != "" {
			e.tripOnce.Do(func() { close(e.tripped) })
		}
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
