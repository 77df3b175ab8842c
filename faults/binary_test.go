package faults_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// The cueop binary, built once for the tests that run it, into the shared
// control plane's directory: clustertest removes it with the cluster.
var bin struct {
	mu   sync.Mutex
	path string
}

// cueopBinary builds ./cmd/cueop once and returns its path.
func cueopBinary(t *testing.T) string {
	t.Helper()
	bin.mu.Lock()
	defer bin.mu.Unlock()
	if bin.path == "" {
		p := filepath.Join(clustertest.Cluster().Dir, "bin", "cueop")
		start := time.Now()
		if out, err := exec.Command("go", "build", "-o", p, "github.com/cueop/cueop/cmd/cueop").CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/cueop: %v\n%s", err, out)
		}
		t.Logf("built cueop in %s", time.Since(start).Round(time.Millisecond))
		bin.path = p
	}
	return bin.path
}

// cueopProc is a `cueop run` subprocess in its own process group.
type cueopProc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startCueop runs `cueop run` on templates dir against e, serving ns,
// with its output in a log file. The test's cleanup stops it. The kinds
// act as the operator (--shared-identity): these tests are about crashes
// and bad input, and their templates have no generated RBAC; per-kind
// identities are tested in engine/operator and e2e.
func startCueop(t *testing.T, e *env, dir, ns string, extra ...string) *cueopProc {
	t.Helper()
	args := append([]string{"run", "--templates", dir, "--install-crds", "--webhook-local", "--namespace", ns,
		"--kubeconfig", e.kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--shared-identity"}, extra...)
	logFile, err := os.CreateTemp(t.TempDir(), "cueop-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(cueopBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cueopProc{cmd: cmd, logPath: logFile.Name(), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("cueop log (%s):\n%s", p.logPath, tail(p.log(t), 40))
		}
	})
	return p
}

// stop ends the process group: SIGTERM, then SIGKILL after 60 s (the
// manager's graceful shutdown takes up to 30 s).
func (p *cueopProc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Errorf("cueop (pid %d) ignored SIGTERM for 60s", p.cmd.Process.Pid)
		p.kill(t)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // whatever is left of the group
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *cueopProc) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill cueop: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("cueop (pid %d) still running 30s after SIGKILL", p.cmd.Process.Pid)
	}
}

// exited says whether the process has ended.
func (p *cueopProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *cueopProc) log(t *testing.T) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freePort returns a free port of 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// metricLines returns the lines of a Prometheus text endpoint that
// contain every part.
func metricLines(url string, parts ...string) ([]string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	var out []string
next:
	for _, line := range strings.Split(b.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out, nil
}

// metric reads the value of a counter or gauge without labels from a
// Prometheus text endpoint.
func metric(url, name string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	return 0, fmt.Errorf("no metric %s at %s", name, url)
}
