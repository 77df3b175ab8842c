package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/bench/baseline"
	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/operator"
)

// opStats is what an operator process reports on /stats.
type opStats struct {
	harness.Counts
	// Ready is true once the operator's caches have synced.
	Ready bool `json:"ready"`
	// Reconciles and QueueDepth sum controller-runtime's
	// controller_runtime_reconcile_total and workqueue_depth.
	Reconciles float64 `json:"reconciles"`
	QueueDepth float64 `json:"queueDepth"`
	// Renders counts cueop's renders (cueop_render_duration_seconds; a
	// reuse of the render memo or a settled CR is none); 0 for the baseline.
	Renders float64 `json:"renders"`
	// Heap figures in bytes, sampled every 100ms since the process started:
	// HeapInuse as runtime.MemStats defines it (objects plus unused space in
	// in-use spans) and HeapAlloc (live and unswept objects).
	HeapInuse     uint64 `json:"heapInuse"`
	PeakHeapInuse uint64 `json:"peakHeapInuse"`
	PeakHeapAlloc uint64 `json:"peakHeapAlloc"`
	// CPUSeconds is user+system CPU time; MaxRSS the peak resident set
	// (VmHWM), in bytes.
	CPUSeconds float64 `json:"cpuSeconds"`
	MaxRSS     int64   `json:"maxRSS"`
	// WorkerCPUSeconds and WorkerMaxRSS are the render workers' share of
	// CPUSeconds and MaxRSS (workers.go): the operator's cost is its own
	// plus its workers'; of the workers' memory, the private part (their
	// executable's pages are the operator's).
	WorkerCPUSeconds float64 `json:"workerCPUSeconds"`
	WorkerMaxRSS     int64   `json:"workerMaxRSS"`
	// Objects counts the writes by object name, with -shards only
	// (shards.go).
	Objects map[string]int64 `json:"objects,omitempty"`
	// AllocBytes and AllocObjects are the heap allocations since the
	// process started (runtime/metrics).
	AllocBytes   uint64 `json:"allocBytes"`
	AllocObjects uint64 `json:"allocObjects"`
	// ReconcileTime is controller_runtime_reconcile_time_seconds, every
	// controller of the process merged (hist.go).
	ReconcileTime hist `json:"reconcileTime"`
	// Conversions are the objects the conversion webhook converted and
	// ConversionSeconds the time its reviews took
	// (cueop_conversion_objects_total, cueop_conversion_review_seconds).
	Conversions       float64 `json:"conversions"`
	ConversionSeconds float64 `json:"conversionSeconds"`
	// ConversionsBy are Conversions by cause (conversionCause).
	ConversionsBy map[string]float64 `json:"conversionsBy,omitempty"`
}

// The Maximum concurrent reconciles of both operators (cueop's default).
const maxConcurrent = 4

// runOperator is the `bench operator` subcommand: one operator, cueop or
// the baseline, in a process of its own, so that its memory and CPU are its
// own. It serves its counters on -stats and stops on SIGTERM.
func runOperator(args []string) error {
	f, err := parseOperatorFlags(args)
	if err != nil {
		return err
	}
	// Milliseconds: the phases of a restart (informers synced, kind
	// served, controller started) are a second or less apart.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), func(o *zap.Options) { o.TimeEncoder = zapcore.ISO8601TimeEncoder }))
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return err
	}
	counter := harness.Count(cfg)
	var objects *objectWrites
	if f.shards > 0 || f.byObject {
		objects = countObjects(cfg)
	}
	run, synced, err := newOperator(cfg, f)
	if err != nil {
		return err
	}
	if f.cpuprofile != "" {
		stopProfile, err := startCPUProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var ready atomic.Bool
	heap := &heapSampler{profile: f.heapProfile}
	go heap.run(ctx)
	workerMem := &workerMemory{}
	go workerMem.run(ctx)
	ln, err := net.Listen("tcp", f.statsAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: statsHandler(counter, objects, &ready, heap, workerMem)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	go func() {
		if synced(ctx) {
			ready.Store(true)
		}
	}()
	if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// operatorFlags are the flags of `bench operator`.
type operatorFlags struct {
	kind, kubeconfig, namespace, templates, statsAddr, cpuprofile string
	shards                                                        int
	identity, leaseNS                                             string
	byObject                                                      bool
	isolation, identities, heapProfile, webhookDir                string
}

// parseOperatorFlags parses the arguments of `bench operator`.
func parseOperatorFlags(args []string) (*operatorFlags, error) {
	f := &operatorFlags{}
	fs := flag.NewFlagSet("operator", flag.ExitOnError)
	fs.StringVar(&f.kind, "kind", "", "cueop or baseline")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&f.namespace, "namespace", "", "namespace to serve")
	fs.StringVar(&f.templates, "templates", "", "templates directory (cueop)")
	fs.StringVar(&f.statsAddr, "stats", "127.0.0.1:0", "address of the /stats endpoint")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile to this file")
	fs.IntVar(&f.shards, "shards", 0, "cueop only: run a sharded replica of that many ranges (shards.go)")
	fs.StringVar(&f.identity, "identity", "", "with -shards: the replica's identity in the shard Leases")
	fs.StringVar(&f.leaseNS, "lease-namespace", "", "with -shards: the namespace of the shard Leases (default: -namespace)")
	fs.BoolVar(&f.byObject, "objects", false, "count the writes by object name (always with -shards)")
	fs.StringVar(&f.isolation, "render-isolation", "process", "cueop only: process (render workers) or inprocess")
	fs.StringVar(&f.identities, "identities", "", "cueop only: the namespace of the kinds' ServiceAccounts, each kind acting as its own (identities.go); empty: the shared identity")
	fs.StringVar(&f.heapProfile, "heapprofile", "", "write the heap profile to this file whenever the heap in use reaches a new peak (5% above the last written, at most every 2 s)")
	fs.StringVar(&f.webhookDir, "webhook-dir", "", "cueop only: serve the conversion webhook with the port and certificates of this directory (webhook.go)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f, nil
}

// newOperator builds the operator the flags f ask for on cfg: run runs it
// until its context ends, synced waits until its caches have synced.
func newOperator(cfg *rest.Config, f *operatorFlags) (run func(context.Context) error, synced func(context.Context) bool, err error) {
	mopts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	if f.kind == "cueop" {
		// The garbage collector's target is cueop run's.
		operator.TuneGC()
	}
	switch {
	case f.kind == "cueop" && f.shards > 0:
		leases := f.leaseNS
		if leases == "" {
			leases = f.namespace
		}
		return shardedReplica(cfg, f.templates, f.namespace, leases, f.identity, f.shards, mopts)
	case f.kind == "cueop":
		return newCueop(cfg, f, mopts)
	case f.kind == "baseline":
		return newBaseline(cfg, f, mopts)
	default:
		return nil, nil, fmt.Errorf("-kind %q: want cueop or baseline", f.kind)
	}
}

// newCueop builds cueop's operator, as newOperator.
func newCueop(cfg *rest.Config, f *operatorFlags, mopts ctrl.Options) (func(context.Context) error, func(context.Context) bool, error) {
	var conv *operator.Conversion // nil: operator.LocalConversion
	if f.webhookDir != "" {
		var err error
		if conv, err = loadWebhookDir(f.webhookDir); err != nil {
			return nil, nil, err
		}
	}
	// QPS and Burst left unset: operator.New sets its defaults.
	op, err := operator.New(cfg, operator.Options{
		Templates: f.templates, MaxConcurrent: maxConcurrent, Namespace: f.namespace, Manager: mopts,
		InProcess: f.isolation == "inprocess", Conversion: conv, Identities: identityConfig(f.identities),
	})
	if err != nil {
		return nil, nil, err
	}
	synced := func(ctx context.Context) bool {
		return op.Manager().GetCache().WaitForCacheSync(ctx) && op.Parents().WaitForCacheSync(ctx)
	}
	return op.Run, synced, nil
}

// newBaseline builds the hand-written operator, as newOperator, with the
// same client limits as cueop.
func newBaseline(cfg *rest.Config, f *operatorFlags, mopts ctrl.Options) (func(context.Context) error, func(context.Context) bool, error) {
	cfg.QPS, cfg.Burst = operator.DefaultQPS, operator.DefaultBurst // the same limits as cueop
	o := baseline.ManagerOptions(f.namespace)
	o.Metrics, o.HealthProbeBindAddress = mopts.Metrics, mopts.HealthProbeBindAddress
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		return nil, nil, err
	}
	if err := baseline.Setup(mgr, maxConcurrent); err != nil {
		return nil, nil, err
	}
	return mgr.Start, mgr.GetCache().WaitForCacheSync, nil
}

// startCPUProfile writes a CPU profile to file until stop.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// statsHandler serves the process's counters on /stats (opStats) and its
// heap profile on /debug/pprof/heap.
func statsHandler(counter *harness.Counter, objects *objectWrites, ready *atomic.Bool, heap *heapSampler, workerMem *workerMemory) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		st := opStats{Counts: counter.Snapshot(), Ready: ready.Load()}
		st.Reconciles, st.QueueDepth, st.Renders = controllerMetrics()
		st.HeapInuse, st.PeakHeapInuse, st.PeakHeapAlloc = heap.get()
		st.CPUSeconds, st.MaxRSS = rusage()
		st.WorkerCPUSeconds, st.WorkerMaxRSS = workerUsage(workerMem)
		st.CPUSeconds += st.WorkerCPUSeconds
		st.MaxRSS += st.WorkerMaxRSS
		st.Objects = objects.snapshot()
		st.AllocBytes, st.AllocObjects = allocs()
		st.ReconcileTime = reconcileTime()
		st.Conversions, st.ConversionSeconds, st.ConversionsBy = conversions()
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, _ *http.Request) {
		_ = pprof.Lookup("heap").WriteTo(w, 0)
	})
	return mux
}

// controllerMetrics sums the reconciles and the work queue depths of the
// process's controllers, and cueop's renders.
func controllerMetrics() (reconciles, depth, renders float64) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, 0, 0
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "controller_runtime_reconcile_total":
				reconciles += m.GetCounter().GetValue()
			case "workqueue_depth":
				depth += m.GetGauge().GetValue()
			case "cueop_render_duration_seconds":
				renders += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return reconciles, depth, renders
}

// heapSampler keeps the peak heap figures, read from runtime/metrics (no
// stop-the-world, unlike runtime.ReadMemStats).
type heapSampler struct {
	mu                       sync.Mutex
	inuse, peakInuse, peakAl uint64
	// profile, when set, is the file the heap profile is written to at
	// each new peak of the live heap (heapprofile.go).
	profile string
	peakAt  peakProfile
}

func (h *heapSampler) run(ctx context.Context) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(samples)
		alloc := samples[0].Value.Uint64()
		inuse := alloc + samples[1].Value.Uint64()
		h.mu.Lock()
		h.inuse = inuse
		h.peakInuse = max(h.peakInuse, inuse)
		h.peakAl = max(h.peakAl, alloc)
		h.mu.Unlock()
		h.peakAt.maybeWrite(h.profile, alloc)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *heapSampler) get() (inuse, peakInuse, peakAlloc uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inuse, h.peakInuse, h.peakAl
}

// rusage returns the process's CPU time and peak RSS (VmHWM). The peak
// RSS is read from /proc/self/status: getrusage's ru_maxrss survives
// execve, so a process started by a large driver would report the driver's
// resident set at the fork.
func rusage() (cpuSeconds float64, maxRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), vmHWM(ru.Maxrss * 1024)
}

// vmHWM is the VmHWM line of /proc/self/status in bytes, or def.
func vmHWM(def int64) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return def
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return def
}
