package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cueop/cueop/bench/harness"
)

// opProc is an operator running in a child process (`bench operator`).
type opProc struct {
	kind, name string
	cmd        *exec.Cmd
	addr       string
	exited     chan struct{} // closed when the process has ended
	err        error         // its exit status, once exited is closed
	stopOnce   sync.Once
	Profile    string // CPU profile file, "" when none
	// started is when the process was started: after the driver's writes
	// of the CRD, and once their effect on the API server has passed.
	started time.Time
}

// operators are the operator processes a bench starts on its lab's control
// plane, and the conversion webhook their CRD points at (webhook.go).
type operators struct {
	*session
	lab *lab
	// syncTimeout bounds an operator's start until its caches synced; 0
	// means 2 minutes.
	syncTimeout time.Duration
	// cueops are the cueop processes started, to leave the webhook in
	// place while one runs.
	cueops []*opProc
	// webhooks are the webhook directories (webhook.go) of the cueop
	// processes, by kubeconfig.
	webhooks map[string]string
}

// cueopRunning is whether a cueop process started by o still runs.
func (o *operators) cueopRunning() bool {
	for _, p := range o.cueops {
		select {
		case <-p.exited:
		default:
			return true
		}
	}
	return false
}

// deleteNamespace is lab.deleteNamespace, once the CRD no longer points
// at the webhook of a cueop process stopped (webhook.go) when none runs:
// the API server could not read the CRs back through it (a relist of its
// watch cache) to delete them.
func (o *operators) deleteNamespace(ctx context.Context, ns string) (time.Duration, error) {
	if o.lab.crd != "" && !o.cueopRunning() {
		if _, err := harness.SetConversion(ctx, o.lab.rest, o.lab.crd, false); err != nil {
			return 0, err
		}
	}
	return o.lab.deleteNamespace(ctx, ns)
}

// startOperator starts an operator of kind on namespace ns and waits until
// its caches have synced. name names its log and profile files in cfg.Out;
// extra are more flags of `bench operator`.
func (o *operators) startOperator(ctx context.Context, kind, name, ns, templates string, extra ...string) (*opProc, error) {
	var wargs []string
	if kind == "cueop" && !slices.Contains(extra, "-shards") {
		// Replicas of a sharded point serve the webhook their own way.
		var err error
		if wargs, err = o.webhookArgs(o.lab.cluster.KubeconfigPath); err != nil {
			return nil, err
		}
	}
	if err := o.pointConversion(ctx, kind, name, wargs); err != nil {
		return nil, err
	}
	p, logf, err := o.launch(kind, name, ns, templates, slices.Concat(extra, wargs))
	if err != nil {
		return nil, err
	}
	return o.awaitReady(ctx, p, logf.Name())
}

// pointConversion sets the conversion of the CRD installed last for an
// operator of kind about to start, with the webhook arguments wargs (nil
// when it serves none of its own), and waits until the CRs' watches are
// served again if that wrote the CRD.
func (o *operators) pointConversion(ctx context.Context, kind, name string, wargs []string) error {
	wrote := false // the CRD, here
	switch {
	case o.lab.crd == "":
	case wargs != nil:
		// Pointed at the webhook the process will serve, as it would
		// point it: a restart finds it pointed and writes nothing.
		conv, err := loadWebhookDir(wargs[1])
		if err != nil {
			return err
		}
		if wrote, err = harness.PointConversion(ctx, o.lab.rest, o.lab.crd, conv.Endpoint.URL, conv.Endpoint.Certs.CABundle()); err != nil {
			return err
		}
	case kind == "cueop" || !o.cueopRunning():
		// The baseline serves no conversion webhook; cueop serves its own
		// (and keeps serving it beside a baseline started after it).
		var err error
		if wrote, err = harness.SetConversion(ctx, o.lab.rest, o.lab.crd, kind == "cueop"); err != nil {
			return err
		}
	}

	// A write of the CRD restarts the API server's storage of its CRs: the
	// process starts once their watches are served again.
	if wrote {
		if err := harness.WaitWatchable(ctx, o.lab.rest, o.lab.crd, 30*time.Second); err != nil {
			if ctx.Err() != nil {
				return err
			}
			o.logf("%s: %v; started all the same", name, err)
		}
	}
	return nil
}

// launch starts the process of an operator of kind, `bench operator` with
// the flags extra besides its own, its output in the log file it returns,
// and a CPU profile when profiling is on.
func (o *operators) launch(kind, name, ns, templates string, extra []string) (*opProc, *os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	p := &opProc{kind: kind, name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	args := []string{"operator", "-kind", kind, "-namespace", ns, "-kubeconfig", o.lab.cluster.KubeconfigPath,
		"-templates", templates, "-stats", p.addr}
	args = append(args, extra...)
	if o.cfg.Profile {
		p.Profile = filepath.Join(o.cfg.Out, name+".cpu.pprof")
		args = append(args, "-cpuprofile", p.Profile)
	}
	logf, err := os.Create(filepath.Join(o.cfg.Out, name+".log"))
	if err != nil {
		return nil, nil, err
	}
	p.cmd = exec.Command(self, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if p.Profile != "" && kind == "cueop" {
		// Each render worker profiles itself into a directory of its
		// own beside the operator's profile (workerProfiles).
		dir := workerProfileDir(p.Profile)
		_ = os.RemoveAll(dir) // an earlier bench's
		if err := os.MkdirAll(dir, 0o755); err != nil {
			logf.Close()
			return nil, nil, err
		}
		p.cmd.Env = append(os.Environ(), "CUEOP_WORKER_CPUPROFILE="+dir)
	}
	// The operator dies with the driver, whatever ends the driver.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, err
	}
	if kind == "cueop" {
		o.cueops = append(o.cueops, p)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, logf, nil
}

// awaitReady waits until the operator p reports its caches synced, at
// most syncTimeout, and stops it if it does not; log names its log file.
func (o *operators) awaitReady(ctx context.Context, p *opProc, log string) (*opProc, error) {
	syncTimeout := cmp.Or(o.syncTimeout, 2*time.Minute)
	deadline := time.Now().Add(syncTimeout)
	for {
		st, err := p.stats()
		if err == nil && st.Ready {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("operator %s exited before it was ready: %v (log: %s)", p.name, p.err, log)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("operator %s not ready within %s (log: %s)", p.name, syncTimeout, log)
		}
	}
}

var statsClient = &http.Client{Timeout: 10 * time.Second}

// stats reads the operator's counters.
func (p *opProc) stats() (opStats, error) {
	var st opStats
	resp, err := statsClient.Get("http://" + p.addr + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// saveHeapProfile writes the operator's heap profile to dir when
// profiling is on.
func (p *opProc) saveHeapProfile(dir string) {
	if p.Profile == "" {
		return
	}
	p.writeHeapProfile(dir)
}

// writeHeapProfile writes the operator's heap profile to dir as
// <name>.heap.pprof.
func (p *opProc) writeHeapProfile(dir string) {
	resp, err := statsClient.Get("http://" + p.addr + "/debug/pprof/heap")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(dir, p.name+".heap.pprof"))
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

// mustStats is stats for a running operator; a failure ends the benchmark.
func (p *opProc) mustStats() opStats {
	st, err := p.stats()
	if err != nil {
		panic(fmt.Errorf("operator %s: stats: %w", p.name, err))
	}
	return st
}

// stop ends the operator (SIGTERM, SIGKILL after 30s) and waits for it; the
// CPU profile is complete afterwards.
func (p *opProc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
