package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/cueop/cueop/engine/budget"
)

// pollEvery is how often the CPU time and resident memory of a busy
// worker are read.
const pollEvery = 20 * time.Millisecond

// helloTimeout bounds a worker's start: a program that does not answer
// as a worker (a test binary without worker.Main) is killed.
const helloTimeout = 30 * time.Second

// proc is one worker process.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	done   chan struct{} // closed when the process has exited
	// spent is the worker's CPU time as of its last answer, which is
	// where the next evaluation's starts.
	spent time.Duration
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &proc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: &tail{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w.pid = cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	hello := make(chan error, 1)
	go func() {
		var resp response
		err := readMessage(w.out, &resp)
		if err == nil && resp.Hello == nil {
			err = errors.New("no hello")
		}
		w.spent = resp.CPU
		hello <- err
	}()
	select {
	case err = <-hello:
	case <-time.After(helloTimeout):
		err = errors.New("no answer")
	}
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("worker did not start: %w%s", err, w.stderr.fatal())
	}
	return w, nil
}

func (w *proc) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.in.Close()
}

func (w *proc) close() { _ = w.in.Close() }

// usage is what one evaluation used of its worker.
type usage struct {
	cpu     time.Duration
	wall    time.Duration
	rss     int64 // the worker's resident memory, at its highest seen
	limit   string
	crashed string // the worker's fatal error, when it died
}

// String reads "1.2s of CPU in 1.3s, worker resident memory at most 80.0 MiB".
func (u usage) String() string {
	return fmt.Sprintf("%s of CPU in %s, worker resident memory at most %s", u.cpu.Round(time.Millisecond), u.wall.Round(time.Millisecond), budget.MiB(u.rss))
}

// call sends req and waits for the answer, killing the worker when the
// evaluation overruns b (CPU time: half as much again as the worker's own
// budget; wall clock: budget.WallFactor plus one times it, so that the
// worker's own budget answers first) or memory bytes of
// resident memory. ok is false when the worker cannot serve again; u says
// why and what the evaluation used.
func (w *proc) call(ctx context.Context, req *request, b budget.Budget, memory int64) (resp *response, u usage, ok bool, err error) {
	msg, err := frame(req)
	if err != nil {
		return nil, u, true, err // nothing sent
	}
	return w.send(ctx, msg, b, memory)
}

// send is call with the request framed (frame). The caller's context
// returns it whatever the worker does, also while the request is being
// written: a worker that stops reading is killed.
func (w *proc) send(ctx context.Context, msg []byte, b budget.Budget, memory int64) (resp *response, u usage, ok bool, err error) {
	b = b.WithDefaults()
	start, t0 := w.spent, time.Now()
	wrote := make(chan error, 1)
	go func() {
		_, err := w.in.Write(msg)
		wrote <- err
	}()
	var answer chan error // once the request is written
	got := &response{}    // the reader's until it answers
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-wrote:
			if err != nil {
				w.kill()
				return nil, w.died(start, t0), false, nil
			}
			answer = make(chan error, 1)
			go func() { answer <- readMessage(w.out, got) }()
		case err := <-answer:
			if err != nil {
				w.kill()
				return nil, w.died(start, t0), false, nil
			}
			// The worker says its CPU time: no /proc read for the
			// evaluations that end before the first poll.
			w.spent = got.CPU
			u.cpu, u.wall = got.CPU-start, time.Since(t0)
			return got, u, !got.Abandoned, nil
		case <-tick.C:
			u = w.usage(start, t0, u.rss)
			if u.limit = overrun(u, b, memory); u.limit != "" {
				w.kill()
				return nil, u, false, nil
			}
		case <-ctx.Done():
			w.kill()
			return nil, u, false, ctx.Err()
		}
	}
}

func overrun(u usage, b budget.Budget, memory int64) string {
	switch {
	case memory > 0 && u.rss > memory:
		return "memory"
	case b.Time > 0 && u.cpu > b.Time+b.Time/2:
		return "cpu"
	case b.Time > 0 && u.wall > b.Time*(budget.WallFactor+1):
		return "wall"
	}
	return ""
}

func (w *proc) cpu() time.Duration {
	c, _ := procCPU(w.pid)
	return c
}

func (w *proc) usage(start time.Duration, t0 time.Time, rss int64) usage {
	u := usage{cpu: w.cpu() - start, wall: time.Since(t0), rss: rss}
	if r, err := procStatus(w.pid, "VmRSS:"); err == nil && r > u.rss {
		u.rss = r
	}
	return u
}

// died is the usage of a worker that ended during an evaluation.
func (w *proc) died(start time.Duration, t0 time.Time) usage {
	u := usage{wall: time.Since(t0)}
	<-w.done
	if st := w.cmd.ProcessState; st != nil {
		u.cpu = st.UserTime() + st.SystemTime() - start
		u.rss = maxRSS(st)
	}
	u.crashed = strings.TrimPrefix(w.stderr.fatal(), ": ")
	if u.crashed == "" {
		u.crashed = "exited"
	}
	return u
}

// tail keeps the first and the last bytes a worker wrote to stderr: Go
// says why it dies first, then dumps every goroutine.
type tail struct {
	mu         sync.Mutex
	head, last []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := min(len(p), tailSize-len(t.head)); n > 0 {
		t.head = append(t.head, p[:n]...)
	}
	t.last = append(t.last, p...)
	if len(t.last) > tailSize {
		t.last = append(t.last[:0], t.last[len(t.last)-tailSize:]...)
	}
	return len(p), nil
}

// fatal is the first line of the worker's Go runtime crash, ": "-prefixed,
// or "".
func (t *tail) fatal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for line := range strings.Lines(string(t.head) + "\n" + string(t.last)) {
		line = strings.TrimSpace(line)
		if isFatal(line) {
			return ": " + line
		}
	}
	return ""
}

// isFatal tells the line of a worker's stderr that says why it died: Go's
// runtime (out of memory, a fatal error, a panic), the race detector's
// runtime, or the worker itself.
func isFatal(line string) bool {
	for _, p := range []string{"runtime: out of memory", "fatal error:", "panic:", "cueop worker:"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.Contains(line, "ThreadSanitizer") && strings.Contains(line, "ERROR")
}
