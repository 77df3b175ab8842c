package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one component's child process. It can be started again after it
// stopped, with the same command line.
type process struct {
	name    string
	path    string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's result, set before done is closed
}

// start launches the process in its own process group, appending its output to
// its log file. The kernel kills it if the thread that started it dies.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go p.wait(cmd, p.done)
	return nil
}

func (p *process) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	close(done)
}

// running returns the pid and the exit channel of the running process, if any.
func (p *process) running() (pid int, done <-chan struct{}, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0, nil, false
	}
	return p.cmd.Process.Pid, p.done, true
}

// exited returns a non-nil error if the process has exited since it was started.
func (p *process) exited() error {
	pid, done, ok := p.running()
	if !ok {
		return fmt.Errorf("%s: not running", p.name)
	}
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("%s (pid %d) exited: %v; see %s", p.name, pid, p.err, p.logPath)
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits
// for the process to exit. Stopping a stopped process does nothing.
func (p *process) stop(grace time.Duration) error {
	pid, done, ok := p.running()
	if !ok {
		return nil
	}
	err := signalGroup(pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		err = errors.Join(err, signalGroup(pid, syscall.SIGKILL))
		<-done
	}
	// Kill whatever else is left in the group, e.g. a child the process forked.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s (pid %d): %w", p.name, pid, err)
	}
	return nil
}

func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}
