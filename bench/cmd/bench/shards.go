package main

// `go run ./bench/cmd/bench shards` (make bench-shards) measures cueop
// sharded over several replicas (engine/shard) against one unsharded
// replica, on one local control plane with the ShardedListAndWatch feature
// gate on, and rewrites its section of docs/benchmarks.md:
//
//   - N RedisClusters (BENCH_N, default 3000) converged by one unsharded
//     cueop process, in a namespace of their own;
//   - N more converged by BENCH_SHARDS (default 3) replicas of
//     `cueop run --shards BENCH_SHARDS`, each a process of its own, in
//     another namespace: per-replica peak heap against the unsharded one,
//     writes per CR, and which replica wrote each CR's status and children
//     (each CR must be written by exactly one);
//   - one replica killed (SIGKILL) and a Pod of one of its CRs edited by
//     hand: the time until its ranges are held by the others and the Pod
//     is repaired, against the lease duration (shard.DefaultLeaseDuration)
//     and 5 s.
//
// The unsharded namespace is kept while the sharded replicas run (its
// objects idle on the API server); BENCH_NODES, BENCH_OUT and BENCH_DOC
// mean what they mean for `bench`.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/shard"
	"github.com/cueop/cueop/localcluster"
)

// shardTitle is the heading of the section of docs/benchmarks.md that
// `bench shards` owns.
const shardTitle = "## Sharding: one replica against several"

// objectWrites counts a process's writes by object name.
type objectWrites struct {
	mu sync.Mutex
	n  map[string]int64
}

var objectPath = regexp.MustCompile(`/namespaces/[^/]+/[^/]+/([^/]+)(/status)?$`)

func countObjects(cfg *rest.Config) *objectWrites {
	o := &objectWrites{n: map[string]int64{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &objectCounting{rt: rt, o: o} })
	return o
}

type objectCounting struct {
	rt http.RoundTripper
	o  *objectWrites
}

func (c *objectCounting) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if m := objectPath.FindStringSubmatch(req.URL.Path); m != nil {
			c.o.mu.Lock()
			c.o.n[m[1]]++
			c.o.mu.Unlock()
		}
	}
	return c.rt.RoundTrip(req)
}

func (o *objectWrites) snapshot() map[string]int64 {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]int64, len(o.n))
	for k, v := range o.n {
		out[k] = v
	}
	return out
}

// shardedReplica is `bench operator -kind cueop -shards N`: a replica of
// `cueop run --shards N` serving ns ("" for every namespace), its Leases
// in leaseNS.
func shardedReplica(cfg *rest.Config, templates, ns, leaseNS, identity string, shards int, mopts ctrl.Options) (func(context.Context) error, func(context.Context) bool, error) {
	s, err := operator.NewSharded(cfg, operator.Options{
		Templates: templates, MaxConcurrent: maxConcurrent, Namespace: ns, Manager: mopts,
	}, operator.Sharding{Shards: shards, Identity: identity, Namespace: leaseNS})
	if err != nil {
		return nil, nil, err
	}
	return s.Run, s.Manager().GetCache().WaitForCacheSync, nil
}

// shardReport is what `bench shards` measured.
type shardReport struct {
	cfg      config
	replicas int
	started  time.Time
	elapsed  time.Duration
	machine  string
	versions string

	unsharded    opStats
	unshardedRun time.Duration // all Ready after the first create

	sharded    []opStats // by replica
	shardedRun time.Duration
	// writers counts the CRs by how many replicas wrote their status or
	// children; objWrites are those writes, all replicas together.
	writers   map[int]int
	objWrites int64

	killed            string
	takeover, repair  time.Duration
	lease             time.Duration
	heldAfterTakeover []string
}

func runShards() {
	cfg := loadConfig()
	if os.Getenv("BENCH_N") == "" {
		cfg.N = 3000
	}
	replicas := envInt("BENCH_SHARDS", 3)
	if replicas < 2 {
		fatalf("BENCH_SHARDS=%d: want 2 or more", replicas)
	}
	cfg.Profile = false
	runSection(cfg, shardTitle, func(ctx context.Context, s *session) (string, error) {
		rep, err := (&shardBench{newRig(s)}).shards(ctx, replicas)
		if err != nil {
			return "", err
		}
		return rep.markdown(), nil
	})
}

// shardBench is `bench shards`: cueop on one replica, then sharded over
// several (shardReport).
type shardBench struct{ rig }

func (b *shardBench) shards(ctx context.Context, replicas int) (*shardReport, error) {
	rep := &shardReport{cfg: b.cfg, replicas: replicas, started: time.Now(), machine: machineInfo(), lease: shard.DefaultLeaseDuration}
	tmp, err := os.MkdirTemp("", "cueop-bench-")
	if err != nil {
		return nil, err
	}
	b.tmp = tmp
	defer os.RemoveAll(tmp)
	b.logf("starting the local control plane (%d kwok nodes, ShardedListAndWatch on)", b.cfg.Nodes)
	stopCluster, err := b.lab.startCluster(ctx, localcluster.Options{
		Nodes: b.cfg.Nodes, FeatureGates: map[string]bool{"ShardedListAndWatch": true},
	})
	if err != nil {
		return nil, err
	}
	defer stopCluster()
	rep.versions = b.lab.versions(ctx)
	tmpl, err := b.templatesCopy()
	if err != nil {
		return nil, err
	}
	if err := b.lab.installCRD(ctx, tmpl); err != nil {
		return nil, err
	}
	if err := b.unshardedRun(ctx, rep, tmpl); err != nil {
		return nil, fmt.Errorf("unsharded: %w", err)
	}
	if err := b.shardedRun(ctx, rep, tmpl); err != nil {
		return nil, fmt.Errorf("sharded: %w", err)
	}
	rep.elapsed = time.Since(b.start)
	return rep, nil
}

// convergeN creates N CRs in ns and waits until all are Ready.
func (b *shardBench) convergeN(ctx context.Context, ns string) (time.Duration, error) {
	cr, err := b.lab.trackCRs(ctx, ns)
	if err != nil {
		return 0, err
	}
	defer cr.stop()
	start := time.Now()
	if err := b.lab.createCRs(ctx, ns, b.cfg.N); err != nil {
		return 0, err
	}
	allAt, err := waitFor(ctx, 30*time.Minute, func() bool { return cr.readyCount() == b.cfg.N })
	if err != nil {
		return 0, fmt.Errorf("all Ready: %w (%d Ready)", err, cr.readyCount())
	}
	return allAt.Sub(start), nil
}

func (b *shardBench) unshardedRun(ctx context.Context, rep *shardReport, tmpl string) error {
	ns, err := b.lab.namespace(ctx, "bench-unsharded-")
	if err != nil {
		return err
	}
	p, err := b.ops.startOperator(ctx, "cueop", "unsharded", ns, tmpl, "-objects")
	if err != nil {
		return err
	}
	defer p.stop()
	b.logf("unsharded: creating %d CRs", b.cfg.N)
	if rep.unshardedRun, err = b.convergeN(ctx, ns); err != nil {
		return err
	}
	if rep.unsharded, err = settleCRs(ctx, p, time.Minute); err != nil {
		return err
	}
	b.logf("unsharded: all Ready in %.1fs, peak heap %s, %d writes", rep.unshardedRun.Seconds(), mib(rep.unsharded.PeakHeapInuse), rep.unsharded.Writes)
	return nil
}

func replicaName(i int) string { return fmt.Sprintf("replica-%d", i) }

// holders are the holders of the shard Leases of ns, by range index.
func (l *lab) holders(ctx context.Context, ns string, n int) []string {
	out := make([]string, n)
	for _, r := range shard.Ranges(n) {
		lease, err := l.cs.CoordinationV1().Leases(ns).Get(ctx, r.LeaseName(), metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil {
			out[r.Index] = *lease.Spec.HolderIdentity
		}
	}
	return out
}

// waitBalanced waits until the n ranges of ns are held one per replica.
func (l *lab) waitBalanced(ctx context.Context, ns string, n int) error {
	balanced := func() bool {
		seen := map[string]bool{}
		for _, h := range l.holders(ctx, ns, n) {
			if h == "" || seen[h] {
				return false
			}
			seen[h] = true
		}
		return true
	}
	if _, err := waitFor(ctx, 3*time.Minute, balanced); err != nil {
		return fmt.Errorf("ranges not one per replica: %v: %w", l.holders(ctx, ns, n), err)
	}
	return nil
}

func (b *shardBench) shardedRun(ctx context.Context, rep *shardReport, tmpl string) error {
	n := rep.replicas
	ns, err := b.lab.namespace(ctx, "bench-sharded-")
	if err != nil {
		return err
	}
	procs := make([]*opProc, n)
	for i := range procs {
		if procs[i], err = b.ops.startOperator(ctx, "cueop", replicaName(i), ns, tmpl,
			"-shards", fmt.Sprint(n), "-identity", replicaName(i)); err != nil {
			return err
		}
		defer procs[i].stop()
	}
	if err := b.lab.waitBalanced(ctx, ns, n); err != nil {
		return err
	}
	b.logf("sharded: %d ranges held one per replica (%v); creating %d CRs", n, b.lab.holders(ctx, ns, n), b.cfg.N)
	if rep.shardedRun, err = b.convergeN(ctx, ns); err != nil {
		return err
	}
	rep.sharded = make([]opStats, n)
	for i, p := range procs {
		if rep.sharded[i], err = settleCRs(ctx, p, time.Minute); err != nil {
			return err
		}
	}
	// Which replicas wrote each CR's status and children (objects named
	// rc-NNNNN or rc-NNNNN-*).
	byCR := map[string]map[int]bool{}
	for i, st := range rep.sharded {
		for obj, w := range st.Objects {
			if !strings.HasPrefix(obj, "rc-") || len(obj) < len(crName(0)) {
				continue
			}
			name := obj[:len(crName(0))]
			if byCR[name] == nil {
				byCR[name] = map[int]bool{}
			}
			byCR[name][i] = true
			rep.objWrites += w
		}
	}
	rep.writers = map[int]int{}
	for i := range b.cfg.N {
		rep.writers[len(byCR[crName(i)])]++
	}
	b.logf("sharded: all Ready in %.1fs; CRs by number of replicas writing them: %v", rep.shardedRun.Seconds(), rep.writers)
	return b.killOne(ctx, rep, ns, procs, byCR)
}

// killOne kills replica 0, edits a Pod of one of its CRs by hand, and
// measures until its ranges are held by the others and the Pod repaired.
func (b *shardBench) killOne(ctx context.Context, rep *shardReport, ns string, procs []*opProc, byCR map[string]map[int]bool) error {
	n := rep.replicas
	victim := ""
	for i := range b.cfg.N {
		if w := byCR[crName(i)]; len(w) == 1 && w[0] {
			victim = crName(i)
			break
		}
	}
	if victim == "" {
		return fmt.Errorf("no CR written by %s alone", replicaName(0))
	}
	rep.killed = replicaName(0)
	pod := victim + "-0"
	_ = procs[0].cmd.Process.Kill()
	<-procs[0].exited
	killed := time.Now()
	patch := []byte(`{"metadata":{"labels":{"app":"hijacked"}}}`)
	if _, err := b.lab.cs.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	b.logf("killed %s; Pod %s (of %s, a CR of its range) edited by hand", rep.killed, pod, victim)
	var takeoverAt, repairAt time.Time
	_, err := waitFor(ctx, 5*time.Minute, func() bool {
		now := time.Now()
		if takeoverAt.IsZero() {
			live := true
			for _, h := range b.lab.holders(ctx, ns, n) {
				if h == "" || h == rep.killed {
					live = false
				}
			}
			if live {
				takeoverAt = now
			}
		}
		if repairAt.IsZero() {
			p, err := b.lab.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err == nil && p.Labels["app"] == "redis" {
				repairAt = now
			}
		}
		return !takeoverAt.IsZero() && !repairAt.IsZero()
	})
	if err != nil {
		return fmt.Errorf("after the kill: ranges held by %v, Pod repaired: %v: %w", b.lab.holders(ctx, ns, n), !repairAt.IsZero(), err)
	}
	rep.takeover, rep.repair = takeoverAt.Sub(killed), repairAt.Sub(killed)
	rep.heldAfterTakeover = b.lab.holders(ctx, ns, n)
	b.logf("ranges taken over after %.1fs, Pod repaired after %.1fs", rep.takeover.Seconds(), rep.repair.Seconds())
	return nil
}

func (r *shardReport) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	n, m := r.cfg.N, r.replicas
	p("%s\n\n", shardTitle)
	p("Generated by `make bench-shards` (`go run ./bench/cmd/bench shards`, see `bench/cmd/bench/shards.go`) on %s in %s; the next run rewrites this section.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.elapsed.Round(time.Second))
	p("- Machine: %s, %s at the end, shared with other engineers' builds and tests: absolute times are bounded by the API server on 2 shared cores; the ratios are the figures.\n", r.machine, loadavg())
	p("- Versions: %s.\n", r.versions)
	p("- Setup: one local control plane with kube-apiserver's `--feature-gates=ShardedListAndWatch=true` (kwok with %d nodes). First %d RedisClusters (replicas 3: a ConfigMap, a Service and 3 Pods each) converged by one unsharded cueop process; then, in another namespace (the first one's objects kept, idle), %d more converged by %d replicas of `cueop run --shards %d`, each a process of its own, started before the CRs and holding one range each (Lease duration %s, renew deadline %s, retry period %s: the defaults). Each process: 4 concurrent reconciles, QPS 100 / burst 200, counting its writes by object.\n\n",
		r.cfg.Nodes, n, n, m, m, shard.DefaultLeaseDuration, shard.DefaultRenewDeadline, shard.DefaultRetryPeriod)
	maxHeap := uint64(0)
	for _, st := range r.sharded {
		maxHeap = max(maxHeap, st.PeakHeapInuse)
	}
	ratio := float64(maxHeap) / float64(r.unsharded.PeakHeapInuse)
	exactlyOne := r.writers[1]
	unshardedObj, _ := crWrites(r.unsharded.Objects)
	unshardedPerCR := perCR(unshardedObj, n)
	shardedPerCR := perCR(r.objWrites, n)
	p("| figure | measured | target | |\n|---|---|---|---|\n")
	p("| per-replica peak heap in use / unsharded peak heap in use | %.0f%% (%s / %s) | ≤ 40%% | %s |\n", 100*ratio, mib(maxHeap), mib(r.unsharded.PeakHeapInuse), mark(ratio <= 0.4))
	p("| CRs whose status and children were written by exactly one replica | %d of %d | all | %s |\n", exactlyOne, n, mark(exactlyOne == n))
	p("| writes of each CR's status and children per CR, sharded (all replicas) / unsharded | %.2f / %.2f | the same | %s |\n", shardedPerCR, unshardedPerCR, mark(shardedPerCR <= unshardedPerCR+0.05))
	p("| a replica killed: its ranges held by the others after | %.1f s | ≤ lease + 5 s = %s | %s |\n", r.takeover.Seconds(), r.lease+5*time.Second, mark(r.takeover <= r.lease+5*time.Second))
	p("| a replica killed: a Pod of one of its CRs, edited by hand, repaired after | %.1f s | ≤ lease + 5 s = %s | %s |\n\n", r.repair.Seconds(), r.lease+5*time.Second, mark(r.repair <= r.lease+5*time.Second))
	p("| process | CRs written | peak heap in use | peak heap allocated | VmHWM | writes (all) | status and children writes per CR | CPU (s) |\n|---|---|---|---|---|---|---|---|\n")
	p("| unsharded | %d | %s | %s | %s | %d | %.2f | %.1f |\n", n, mib(r.unsharded.PeakHeapInuse), mib(r.unsharded.PeakHeapAlloc),
		mib(uint64(r.unsharded.MaxRSS)), r.unsharded.Writes, unshardedPerCR, r.unsharded.CPUSeconds)
	for i, st := range r.sharded {
		w, crs := crWrites(st.Objects)
		p("| %s | %d | %s | %s | %s | %d | %.2f | %.1f |\n", replicaName(i), len(crs), mib(st.PeakHeapInuse), mib(st.PeakHeapAlloc),
			mib(uint64(st.MaxRSS)), st.Writes, perCR(w, max(len(crs), 1)), st.CPUSeconds)
	}
	p("\nAll %d CRs Ready %.1f s after the first create with one replica, %.1f s with %d. Writes of CRs' status and children by the sharded replicas: %d (%.2f per CR); the rest of their writes are Events and Lease renewals. CRs by the number of replicas that wrote them: %v.\n\n",
		n, r.unshardedRun.Seconds(), r.shardedRun.Seconds(), m, r.objWrites, perCR(r.objWrites, n), sortedCounts(r.writers))
	p("Kill: %s got SIGKILL (no Lease released); its range was taken over %.1f s later and the Pod edited by hand right after the kill repaired %.1f s after it (Lease holders afterwards: %v). The takeover waits for the Lease to expire (%s after the last renewal) and the next retry; the repair then needs the new holder's caches of that range to sync and its reconcile of every CR of the range (each checked, none written).\n",
		r.killed, r.takeover.Seconds(), r.repair.Seconds(), r.heldAfterTakeover, r.lease)
	return b.String()
}

// settleCRs is settle counting only the writes of CRs' status and
// children: a sharded replica renews its Leases every second.
func settleCRs(ctx context.Context, p *opProc, timeout time.Duration) (opStats, error) {
	st, _, err := settleBy(ctx, timeout, p.mustStats, func(last, st opStats) bool {
		w0, _ := crWrites(last.Objects)
		w, _ := crWrites(st.Objects)
		return w != w0 || st.QueueDepth > 0
	})
	if err != nil {
		return st, fmt.Errorf("operator %s: %w", p.name, err)
	}
	return st, nil
}

// crWrites are the writes of the status and children of CRs (objects named
// rc-NNNNN or rc-NNNNN-*) in objects, and the CRs they belong to.
func crWrites(objects map[string]int64) (writes int64, crs map[string]bool) {
	crs = map[string]bool{}
	for obj, w := range objects {
		if strings.HasPrefix(obj, "rc-") && len(obj) >= len(crName(0)) {
			crs[obj[:len(crName(0))]] = true
			writes += w
		}
	}
	return writes, crs
}

func sortedCounts(m map[int]int) string {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d replica(s): %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
