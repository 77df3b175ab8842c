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
	fs := flag.NewFlagSet("operator", flag.ExitOnError)
	kind := fs.String("kind", "", "cueop or baseline")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	namespace := fs.String("namespace", "", "namespace to serve")
	templates := fs.String("templates", "", "templates directory (cueop)")
	statsAddr := fs.String("stats", "127.0.0.1:0", "address of the /stats endpoint")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to this file")
	shards := fs.Int("shards", 0, "cueop only: run a sharded replica of that many ranges (shards.go)")
	identity := fs.String("identity", "", "with -shards: the replica's identity in the shard Leases")
	leaseNS := fs.String("lease-namespace", "", "with -shards: the namespace of the shard Leases (default: -namespace)")
	byObject := fs.Bool("objects", false, "count the writes by object name (always with -shards)")
	isolation := fs.String("render-isolation", "process", "cueop only: process (render workers) or inprocess")
	identities := fs.String("identities", "", "cueop only: the namespace of the kinds' ServiceAccounts, each kind acting as its own (identities.go); empty: the shared identity")
	heapProfile := fs.String("heapprofile", "", "write the heap profile to this file whenever the heap in use reaches a new peak (5% above the last written, at most every 2 s)")
	webhookDir := fs.String("webhook-dir", "", "cueop only: serve the conversion webhook with the port and certificates of this directory (webhook.go)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Milliseconds: the phases of a restart (informers synced, kind
	// served, controller started) are a second or less apart.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), func(o *zap.Options) { o.TimeEncoder = zapcore.ISO8601TimeEncoder }))
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	counter := harness.Count(cfg)
	var objects *objectWrites
	if *shards > 0 || *byObject {
		objects = countObjects(cfg)
	}
	mopts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}

	var run func(context.Context) error
	var synced func(context.Context) bool
	if *kind == "cueop" {
		// The garbage collector's target is cueop run's.
		operator.TuneGC()
	}
	switch {
	case *kind == "cueop" && *shards > 0:
		leases := *leaseNS
		if leases == "" {
			leases = *namespace
		}
		run, synced, err = shardedReplica(cfg, *templates, *namespace, leases, *identity, *shards, mopts)
		if err != nil {
			return err
		}
	case *kind == "cueop":
		var conv *operator.Conversion // nil: operator.LocalConversion
		if *webhookDir != "" {
			if conv, err = loadWebhookDir(*webhookDir); err != nil {
				return err
			}
		}
		// QPS and Burst left unset: operator.New sets its defaults.
		op, err := operator.New(cfg, operator.Options{
			Templates: *templates, MaxConcurrent: maxConcurrent, Namespace: *namespace, Manager: mopts,
			InProcess: *isolation == "inprocess", Conversion: conv, Identities: identityConfig(*identities),
		})
		if err != nil {
			return err
		}
		run = op.Run
		synced = func(ctx context.Context) bool {
			return op.Manager().GetCache().WaitForCacheSync(ctx) && op.Parents().WaitForCacheSync(ctx)
		}
	case *kind == "baseline":
		cfg.QPS, cfg.Burst = operator.DefaultQPS, operator.DefaultBurst // the same limits as cueop
		o := baseline.ManagerOptions(*namespace)
		o.Metrics, o.HealthProbeBindAddress = mopts.Metrics, mopts.HealthProbeBindAddress
		mgr, err := ctrl.NewManager(cfg, o)
		if err != nil {
			return err
		}
		if err := baseline.Setup(mgr, maxConcurrent); err != nil {
			return err
		}
		run = mgr.Start
		synced = mgr.GetCache().WaitForCacheSync
	default:
		return fmt.Errorf("-kind %q: want cueop or baseline", *kind)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var ready atomic.Bool
	heap := &heapSampler{profile: *heapProfile}
	go heap.run(ctx)
	workerMem := &workerMemory{}
	go workerMem.run(ctx)
	ln, err := net.Listen("tcp", *statsAddr)
	if err != nil {
		return err
	}
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
	srv := &http.Server{Handler: mux}
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
