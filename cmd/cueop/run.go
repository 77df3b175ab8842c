package main

import (
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/internal/useragent"
)

type runFlags struct {
	kubeconfig, metricsAddr, probeAddr, leaderNamespace, namespace string
	installCRDs, leaderElect, apiCompression                       bool
	maxConcurrent, burst, rolloutMaxInFlight                       int
	qps                                                            float32
	migrationPageSize                                              int64
	shard                                                          shardFlags    // run_shard.go
	workers                                                        workerFlags   // worker.go
	webhook                                                        webhookFlags  // webhook.go
	identity                                                       identityFlags // identity.go
	releaseKey                                                     releaseKeyFlags
	pins                                                           pinRecordFlags // source.go
	holder                                                         holderFlags    // holder.go
}

// releaseKeyFlags say where the key of the release proofs is
// (engine/operator/releasekey.go).
type releaseKeyFlags struct{ file, namespace string }

func (f *releaseKeyFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.file, "release-key-file", "", "file holding the key (at least 32 bytes) of the proofs a released child carries; every replica the same (default: the Secret "+operator.ReleaseKeySecret+" of --release-key-namespace, made by cueop)")
	fl.StringVar(&f.namespace, "release-key-namespace", runIdentityNamespace(), "namespace of the Secret "+operator.ReleaseKeySecret+" holding the release proofs' key, made by cueop at first need (default: the pod's)")
}

// options sets the release key options of opts.
func (f *releaseKeyFlags) options(opts *operator.Options) error {
	opts.ReleaseKeyNamespace = f.namespace
	if f.file == "" {
		return nil
	}
	key, err := os.ReadFile(f.file)
	if err != nil {
		return fmt.Errorf("--release-key-file: %w", err)
	}
	if len(key) < operator.MinReleaseKeyBytes {
		return fmt.Errorf("--release-key-file %s: %d bytes, fewer than %d", f.file, len(key), operator.MinReleaseKeyBytes)
	}
	opts.ReleaseKey = key
	return nil
}

func newRun(g *globals, zapOpts *zap.Options) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller: serve every kind of the templates directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			allowedKindsFromEnv(cmd, g) // $CUEOP_ALLOWED_KINDS is the default of --allowed-kinds
			f.identity.fromEnv(cmd)     // identity.go
			log := runLogger(cmd, zapOpts)
			g.source.record = f.pins.record(g.templates, func() (*rest.Config, error) { return restConfig(f.kubeconfig) })
			if err := g.openSourceLogged(cmd, log.WithName("templates")); err != nil { // source.go
				return err
			}
			operator.TuneGC() // GOGC=50 unless $GOGC is set (engine/operator/gc.go)
			if f.shard.shards != 1 {
				return runSharded(g, f) // run_shard.go
			}
			op, err := newOperator(g, f)
			if err != nil {
				return err
			}
			return op.Run(ctrl.SetupSignalHandler())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	fl.BoolVar(&f.installCRDs, "install-crds", false, "apply the generated CRDs at start and when templates change")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 4, "CRs of one kind reconciled at once")
	fl.IntVar(&f.rolloutMaxInFlight, "rollout-max-in-flight", 50, "CRs of a kind moved to a new template revision at once (0: unlimited)")
	fl.Int64Var(&f.migrationPageSize, "storage-migration-page-size", migrate.DefaultPageSize, "CRs a storage migration lists at once")
	fl.Float32Var(&f.qps, "kube-api-qps", operator.DefaultQPS, "client-side limit of API requests per second")
	fl.IntVar(&f.burst, "kube-api-burst", operator.DefaultBurst, "client-side burst of API requests")
	fl.BoolVar(&f.apiCompression, "kube-api-compression", false, "ask the API server for gzip-compressed responses (off: next to the API server it costs both ends CPU)")
	fl.StringVar(&f.namespace, "namespace", "", "serve the CRs of this namespace only (default: all namespaces)")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "metrics address (0 disables)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz address (0 disables)")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "run controllers on the elected leader only")
	fl.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "namespace of the leader election lease and of the shard Leases (default: the pod's)")
	addShardFlags(cmd, &f.shard)
	f.workers.register(fl)
	f.webhook.register(fl)
	f.identity.register(fl, runIdentityNamespace())
	f.releaseKey.register(fl)
	f.pins.register(fl)
	f.holder.register(fl)
	return cmd
}

// runLogger is the logger of cueop run, on standard error (the command's):
// controller-runtime's, and client-go's (klog: leader election, the
// reflectors' warnings), so that every line of the log is one of its
// records.
func runLogger(cmd *cobra.Command, zapOpts *zap.Options) logr.Logger {
	opts := *zapOpts
	if opts.DestWriter == nil {
		opts.DestWriter = cmd.ErrOrStderr()
	}
	log := zap.New(zap.UseFlagOptions(&opts))
	ctrl.SetLogger(log)
	setKlogLogger(log) // klog.go
	return log
}

func newOperator(g *globals, f *runFlags) (*operator.Operator, error) {
	cfg, opts, err := operatorOptions(g, f)
	if err != nil {
		return nil, err
	}
	opts.Manager.LeaderElection = f.leaderElect
	opts.Manager.LeaderElectionID = leaderElectionID
	opts.Manager.LeaderElectionNamespace = f.leaderNamespace
	op, err := operator.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	g.source.refusals.deliver(op.ModuleRefused)
	if err := f.webhook.addRotator(op.Manager(), opts.Conversion, op.ConversionNeeded()); err != nil {
		return nil, err
	}
	return op, addProbes(op.Manager())
}

// operatorOptions are the client and operator settings of cueop run, one
// replica or a sharded one (run_shard.go).
func operatorOptions(g *globals, f *runFlags) (*rest.Config, operator.Options, error) {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, operator.Options{}, err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	opts, err := g.renderOptions()
	if err != nil {
		return nil, operator.Options{}, err
	}
	workers, inProcess, err := f.workers.options()
	if err != nil {
		return nil, operator.Options{}, err
	}
	conv, err := f.webhook.conversion() // webhook.go
	if err != nil {
		return nil, operator.Options{}, err
	}
	ids, err := f.identity.config() // identity.go; nil: the shared identity
	if err != nil {
		return nil, operator.Options{}, err
	}
	o := operator.Options{
		Templates: g.templates, InstallCRDs: f.installCRDs, AllowedKinds: opts.AllowedKinds, ReadableKinds: opts.ReadableKinds, DataKinds: opts.DataKinds, Budget: opts.Budget,
		TemplateLimits: g.limits.limits(), Workers: workers, InProcess: inProcess,
		MaxConcurrent: f.maxConcurrent, APICompression: f.apiCompression, Namespace: f.namespace, RolloutMaxInFlight: f.rolloutMaxInFlight, Conversion: conv,
		StorageMigrationPageSize: f.migrationPageSize, Identities: ids,
		TemplatesAccepted: g.source.accepted,
		Manager: ctrl.Options{
			Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
			HealthProbeBindAddress: f.probeAddr,
		},
	}
	if err := f.releaseKey.options(&o); err != nil {
		return nil, operator.Options{}, err
	}
	if err := f.holder.options(&o); err != nil {
		return nil, operator.Options{}, err
	}
	return cfg, o, nil
}

// addProbes answers /healthz and /readyz.
func addProbes(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// restConfig follows the standard kubeconfig rules, with --kubeconfig first.
// Its requests carry cueop's User-Agent.
func restConfig(path string) (*rest.Config, error) {
	get := ctrl.GetConfig
	if path != "" {
		get = func() (*rest.Config, error) { return clientcmd.BuildConfigFromFlags("", path) }
	}
	cfg, err := get()
	if err != nil {
		return nil, err
	}
	return useragent.Set(cfg), nil
}
