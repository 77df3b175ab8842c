package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Cluster is a running local control plane. Its methods are safe for concurrent
// use.
type Cluster struct {
	// Config authenticates as an admin (group system:masters) with a client
	// certificate. QPS and Burst are left at zero (client-go's defaults).
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the same admin, e.g. for kubectl.
	KubeconfigPath string
	// Dir holds the cluster's data, certificates, configuration and logs.
	Dir string
	// LogDir holds one <component>.log per process (and audit.log).
	LogDir string

	opts  Options
	ports ports
	files files
	procs []*process // in start order
	keep  atomic.Bool
	mu    sync.Mutex // serializes Stop, StopAPIServer and StartAPIServer
	// stopStorage ends the provisioner (storage.go).
	stopStorage context.CancelFunc
}

// Start starts the control plane that opts describe and returns once it is ready:
// every component is healthy and every fake node is Ready. If Start fails, it
// stops what it started and keeps the cluster's directory for its logs.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	bins, err := findBinaries(opts)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	c, err := newCluster(opts, bins)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.run(ctx); err != nil {
		c.keep.Store(true)
		return nil, errors.Join(fmt.Errorf("localcluster: %w; logs in %s", err, c.LogDir), c.Stop())
	}
	return c, nil
}

// newCluster creates the cluster's directory with everything the processes need.
func newCluster(opts Options, bins map[string]string) (*Cluster, error) {
	dir, err := os.MkdirTemp(opts.TempDir, "localcluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, opts: opts}
	c.keep.Store(opts.KeepDir)
	if err := c.setup(bins); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return c, nil
}

// run starts etcd and the apiserver, then the other components side by side,
// then creates the fake nodes.
func (c *Cluster) run(ctx context.Context) error {
	for _, p := range c.procs[:2] {
		if err := c.startAndWait(ctx, p); err != nil {
			return err
		}
	}
	if err := c.startAll(ctx, c.procs[2:]); err != nil {
		return err
	}
	if c.opts.Nodes == 0 {
		return nil
	}
	if err := c.createNodes(ctx); err != nil {
		return err
	}
	storageCtx, stop := context.WithCancel(context.Background())
	c.stopStorage = stop
	return c.startStorage(storageCtx) // storage.go
}

func (c *Cluster) startAndWait(ctx context.Context, p *process) error {
	if err := p.start(); err != nil {
		return err
	}
	return c.waitHealthy(ctx, p)
}

// startAll starts procs at once and waits until all are healthy.
func (c *Cluster) startAll(ctx context.Context, procs []*process) error {
	for _, p := range procs {
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range procs {
		if err := c.waitHealthy(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// Stop ends every process, the last started first, and removes Dir unless
// Options.KeepDir was set or Keep was called. Stop may be called more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.stopStorage != nil {
		c.stopStorage()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(c.opts.StopGrace))
	}
	if !c.keep.Load() {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("localcluster: stop: %w", err)
	}
	return nil
}

// Keep makes Stop keep Dir, e.g. so that the logs of a failed test can be read.
func (c *Cluster) Keep() { c.keep.Store(true) }

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after the stop grace
// period); etcd and the other components keep running.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver().stop(c.opts.StopGrace)
}

// StartAPIServer starts kube-apiserver again, on the same port with the same
// flags, and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startAndWait(ctx, c.apiserver())
}

// apiserver returns the kube-apiserver process, second in start order.
func (c *Cluster) apiserver() *process { return c.procs[1] }

// PIDs returns the process id of every running component, by component name.
func (c *Cluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range c.procs {
		if pid, _, ok := p.running(); ok {
			pids[p.name] = pid
		}
	}
	return pids
}

// AuditLogPath returns the audit log's path; the file exists only with
// Options.AuditLog.
func (c *Cluster) AuditLogPath() string { return c.files.auditLog }
