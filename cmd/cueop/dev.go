package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/useragent"
	"github.com/cueop/cueop/localcluster"
)

type devFlags struct {
	samples, kubeconfigOut, metricsAddr string
	exitWhenReady                       bool
	timeout                             time.Duration
	nodes, maxConcurrent, maxInFlight   int
	shards, replicas                    int
	// log is the operator's logger; logPath the file of its JSON logs
	// (empty when they go to standard error).
	log     logr.Logger
	logPath string
	workers workerFlags // worker.go
	// testdata are the golden cases that, with the samples, give the
	// kinds' rights; identity maps the kinds to ServiceAccounts, and ids
	// applies their roles (nil with --shared-identity; devidentity.go).
	testdata string
	identity identityFlags
	ids      *devIdentities
}

func newDev(g *globals, zapOpts *zap.Options) *cobra.Command {
	f := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run cueop on an embedded local control plane with the samples applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Status lines come from informer handlers, rollout lines
			// and log lines from other goroutines.
			out := &lockedWriter{w: cmd.OutOrStdout()}
			encoder := cmd.Flag("zap-encoder")
			log, logPath, closeLog, err := devLogger(zapOpts, encoder != nil && encoder.Changed, filepath.Dir(f.kubeconfigOut), out)
			if err != nil {
				return err
			}
			defer closeLog()
			ctrl.SetLogger(log)
			setKlogLogger(log) // client-go's lines too (klog.go)
			f.log, f.logPath = log, logPath
			if err := g.openSourceLogged(cmd, log.WithName("templates")); err != nil { // source.go
				return err
			}
			// Not ctrl.SetupSignalHandler: it may be called once per
			// process, and tests run dev more than once.
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			return runDev(ctx, cmd, out, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.samples, "samples", "./config/samples", "directory of CRs to apply once the operator runs")
	fl.StringVar(&f.kubeconfigOut, "kubeconfig-out", ".cueop/dev/kubeconfig", "where to write the kubeconfig of the local cluster")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "metrics address (0 disables)")
	fl.BoolVar(&f.exitWhenReady, "exit-when-ready", false, "exit 0 once every sample is Ready (non-zero on timeout)")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "with --exit-when-ready, how long to wait")
	fl.IntVar(&f.nodes, "nodes", 3, "fake kwok nodes")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 4, "CRs of one kind reconciled at once")
	fl.IntVar(&f.maxInFlight, "rollout-max-in-flight", 50, "CRs of a kind moved to a new template revision at once (0: unlimited)")
	f.workers.register(fl)
	fl.StringVar(&f.testdata, "testdata", "./testdata", "directory of the golden cases, rendered with the samples for the kinds' rights")
	f.identity.register(fl, identity.DefaultNamespace)
	fl.IntVar(&f.shards, "shards", 1, "ranges of CRs spread over the replicas (the local kube-apiserver gets the ShardedListAndWatch gate)")
	fl.IntVar(&f.replicas, "replicas", 1, "replicas run in this process, competing for the shard ranges")
	return cmd
}

// runDev starts the local control plane and the operator. When it fails,
// at start or later, nothing it started outlives it: the operator has
// stopped before the control plane does, and the kubeconfig it wrote, of
// a cluster now gone, is removed (the operator's log stays, it tells why).
func runDev(ctx context.Context, cmd *cobra.Command, out io.Writer, g *globals, f *devFlags) (err error) {
	if err := f.check(); err != nil {
		return err
	}
	if err := ensureBinaries(cmd); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintln(out, "starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)...")
	cluster, err := localcluster.Start(ctx, localcluster.Options{Nodes: f.nodes, FeatureGates: devFeatureGates(f)})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	useragent.Set(cluster.Config) // dev's own requests carry cueop's User-Agent too
	fmt.Fprintf(out, "control plane ready in %s (logs: %s)\n", time.Since(start).Round(100*time.Millisecond), cluster.LogDir)
	if err := writeKubeconfig(cluster.KubeconfigPath, f.kubeconfigOut); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		if rmErr := os.Remove(f.kubeconfigOut); rmErr != nil && !os.IsNotExist(rmErr) {
			err = errors.Join(err, fmt.Errorf("remove the kubeconfig of the stopped cluster: %w", rmErr))
		}
	}()
	set, err := g.load()
	if set == nil {
		return err
	}
	fmt.Fprintln(out, devHint(f.kubeconfigOut, set))
	if f.logPath != "" {
		fmt.Fprintf(out, "operator logs (JSON) in %s; warnings and errors show here\n", f.logPath)
	}
	if f.ids, err = newDevIdentities(ctx, out, g, f, cluster, set); err != nil { // devidentity.go
		return err
	}
	op, runOp, err := devOperators(out, g, f, cluster) // dev_shard.go
	if err != nil {
		return err
	}
	runErr := make(chan error, 1)
	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan struct{})
	go func() {
		defer close(opDone)
		runErr <- runOp(opCtx)
	}()
	// The operator stops before the control plane it talks to.
	defer func() {
		stopOp()
		<-opDone
	}()
	return followDev(ctx, out, op, set, cluster, f, runErr)
}

// check refuses, before any process starts, the flags that cannot work.
func (f *devFlags) check() error {
	if _, err := f.identity.config(); err != nil {
		return err
	}
	if (f.shards > 1 || f.replicas > 1) && (f.shards < 1 || f.replicas < 1) {
		return fmt.Errorf("--shards %d --replicas %d: want 1 or more of each", f.shards, f.replicas)
	}
	return nil
}

// devHint is the kubectl command that lists the CRs of the kinds set
// serves, in every namespace.
// A plural two kinds share (two groups' staticsites) is given with its
// group.
func devHint(kubeconfig string, set *template.Set) string {
	var plurals []string
	for _, k := range set.Kinds {
		plural := k.Resource.Plural
		for _, o := range set.Kinds {
			if o.Resource.Plural == plural && o.Resource.Group != k.Resource.Group {
				plural += "." + k.Resource.Group
				break
			}
		}
		plurals = append(plurals, plural)
	}
	if len(plurals) == 0 {
		return fmt.Sprintf("no kind to serve in %s; kubectl --kubeconfig %s get crds", set.Root, kubeconfig)
	}
	return fmt.Sprintf("kubectl --kubeconfig %s get %s -A", kubeconfig, strings.Join(plurals, ","))
}

// ensureBinaries builds the control-plane binaries when they are missing and
// the build script of this checkout is at hand.
func ensureBinaries(cmd *cobra.Command) error {
	if _, err := os.Stat(filepath.Join(localcluster.DefaultBinDir(), "kube-apiserver")); err == nil || os.Getenv(localcluster.BinDirEnv) != "" {
		return nil
	}
	script := filepath.Join("hack", "k8s", "build.sh")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("control-plane binaries missing in %s and no %s here: run make k8s-bins in a cueop checkout", localcluster.DefaultBinDir(), script)
	}
	fmt.Fprintln(cmd.OutOrStdout(), "building the control-plane binaries (once, about 7 minutes)...")
	build := exec.Command(script)
	build.Stdout, build.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	return build.Run()
}

func writeKubeconfig(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

func devOperator(g *globals, f *devFlags, cluster *localcluster.Cluster) (*operator.Operator, error) {
	opts, err := g.renderOptions()
	if err != nil {
		return nil, err
	}
	workers, inProcess, err := f.workers.options()
	if err != nil {
		return nil, err
	}
	op, err := operator.New(cluster.Config, operator.Options{
		Templates: g.templates, InstallCRDs: true, AllowedKinds: opts.AllowedKinds, ReadableKinds: opts.ReadableKinds, DataKinds: opts.DataKinds, MaxConcurrent: f.maxConcurrent,
		Budget: opts.Budget, Workers: workers, InProcess: inProcess,
		TemplateLimits:     g.limits.limits(),
		RolloutMaxInFlight: f.maxInFlight,
		TemplatesAccepted:  g.source.accepted,
		Identities:         f.ids.config(),
		TemplatesLoaded:    f.ids.hook(),
		Manager:            ctrl.Options{Metrics: metricsserver.Options{BindAddress: f.metricsAddr}, HealthProbeBindAddress: "0", Logger: f.log},
	})
	if err != nil {
		return nil, err
	}
	g.source.refusals.deliver(op.ModuleRefused)
	return op, nil
}

var errNotReady = errors.New("samples not ready")
