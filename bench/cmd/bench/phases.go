package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/template"
)

// namespace creates a fresh namespace and waits for its default
// ServiceAccount (Pods are refused without it).
func (l *lab) namespace(ctx context.Context, prefix string) (string, error) {
	ns, err := l.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := l.cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return ns.Name, err
}

// deleteNamespace deletes ns and waits until it is gone. What the runs
// created goes first, collection by collection and without grace period (no
// kubelet would confirm a Pod's end anyway), so that the namespace
// controller finds it nearly empty. operators.deleteNamespace first sets
// the CRD's conversion to None when no cueop process runs.
func (l *lab) deleteNamespace(ctx context.Context, ns string) (time.Duration, error) {
	start := time.Now()
	zero := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	for _, gvr := range []schema.GroupVersionResource{
		crGVR,
		corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithResource("services"),
		corev1.SchemeGroupVersion.WithResource("configmaps"),
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
		corev1.SchemeGroupVersion.WithResource("events"),
	} {
		if err := l.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
			return 0, fmt.Errorf("delete %s in %s: %w", gvr.Resource, ns, err)
		}
	}
	l.logf("namespace %s emptied in %.1fs", ns, time.Since(start).Seconds())
	if err := l.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := l.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	return time.Since(start), err
}

// convResult is one convergence run of one operator.
type convResult struct {
	Op      string
	Run     int
	Create  time.Duration // all N CRs created
	Half    time.Duration // half of them Ready
	Conv    time.Duration // all Ready
	Settle  time.Duration // no more writes, queue empty
	Counts  harness.Counts
	Stats   opStats // at the end, for memory and CPU
	Profile string
	// CPU is the machine's and the control plane's CPU use from the first
	// create until all were Ready; OpCores the operator's.
	CPU     cpuUse
	OpCores float64
}

// converge creates N RedisClusters at once (16 clients in parallel) and
// waits until every one is Ready, then until the operator settles (no
// write for 2s and an empty work queue), so that the request counts hold
// everything converging cost.
func (c *comparison) converge(ctx context.Context, p *opProc, cr *crTracker, ns string) (convResult, error) {
	var res convResult
	s0 := p.mustStats()
	cpu0 := c.lab.cpuSnapshot()
	start := time.Now()
	if err := c.lab.createCRs(ctx, ns, c.cfg.N); err != nil {
		return res, err
	}
	res.Create = time.Since(start)
	halfAt, err := waitFor(ctx, 15*time.Minute, func() bool { return cr.readyCount() >= (c.cfg.N+1)/2 })
	if err != nil {
		return res, fmt.Errorf("half Ready: %w (%d Ready)", err, cr.readyCount())
	}
	res.Half = halfAt.Sub(start)
	allAt, err := waitFor(ctx, 15*time.Minute, func() bool { return cr.readyCount() == c.cfg.N })
	if err != nil {
		return res, fmt.Errorf("all Ready: %w (%d Ready)", err, cr.readyCount())
	}
	res.Conv = allAt.Sub(start)
	res.CPU = cpu0.until(c.lab.cpuSnapshot(), res.Conv.Seconds())
	res.OpCores = (p.mustStats().CPUSeconds - s0.CPUSeconds) / res.Conv.Seconds()
	st, err := settle(ctx, p, time.Minute)
	if err != nil {
		return res, err
	}
	res.Settle = time.Since(start)
	res.Counts, res.Stats = st.Counts.Sub(s0.Counts), st
	p.saveHeapProfile(c.cfg.Out)
	return res, nil
}

// settle waits until p sent no write for 2s and its queue is empty, at most
// timeout, and returns its stats then.
func settle(ctx context.Context, p *opProc, timeout time.Duration) (opStats, error) {
	st, _, err := settleBy(ctx, timeout, p.mustStats, func(last, st opStats) bool {
		return st.Writes != last.Writes || st.QueueDepth > 0
	})
	if ctx.Err() != nil {
		return st, err
	}
	return st, nil
}

// settleBy reads the stats every 250ms until busy, given the previous and
// the current stats, was false for 2s, at most timeout. It returns the
// stats then and when that quiet period began; an error when timeout
// passed first.
func settleBy(ctx context.Context, timeout time.Duration, read func() opStats, busy func(last, st opStats) bool) (opStats, time.Time, error) {
	deadline := time.Now().Add(timeout)
	last := read()
	quiet := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return last, quiet, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		st := read()
		if busy(last, st) {
			quiet = time.Now()
		}
		last = st
		if time.Since(quiet) >= 2*time.Second {
			return last, quiet, nil
		}
	}
	return last, quiet, fmt.Errorf("not quiet for 2s within %s", timeout)
}

// waitFor polls cond every 10ms and returns when it first held.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return time.Now(), nil
}

func crName(i int) string { return fmt.Sprintf("rc-%05d", i) }

func (l *lab) createCRs(ctx context.Context, ns string, n int) error {
	return l.createCRsThen(ctx, oneNamespace(ns), n, nil)
}

// createCRsThen creates n RedisClusters, 16 at a time, and calls created,
// when not nil, with the index and the API server's answer of each.
func (l *lab) createCRsThen(ctx context.Context, sp crSpace, n int, created func(int, *unstructured.Unstructured)) error {
	return parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		ns := sp.of(i)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
			"metadata": map[string]any{"name": crName(i), "namespace": ns},
			"spec":     map[string]any{"replicas": int64(3), "version": "7.0"},
		}}
		out, err := l.dyn.Resource(crGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err == nil && created != nil {
			created(i, out)
		}
		return err
	})
}

// parallel calls fn for 0 to n-1, workers at a time, and returns the first
// error (the others stop then).
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// steadyResult is the steady state of one operator: a restart over N
// converged CRs (fresh cache, every CR reconciled), then the idle period.
type steadyResult struct {
	Op     string
	Resync time.Duration
	Idle   time.Duration
	// ResyncWrites are the writes until the resync ended; Counts everything
	// the new process sent, resync and idle.
	ResyncWrites int64
	// ResyncRenders are cueop's renders until the resync ended.
	ResyncRenders float64
	Counts        harness.Counts
	Reconciles    float64
	Stats         opStats
	idleStart     time.Time
}

// resync waits until p, started at start on N converged CRs, reconciled
// every one of them and emptied its queue.
func (c *comparison) resync(ctx context.Context, p *opProc, start time.Time) (*steadyResult, error) {
	res := &steadyResult{}
	_, err := waitFor(ctx, 10*time.Minute, func() bool {
		st := p.mustStats()
		return st.Reconciles >= float64(c.cfg.N) && st.QueueDepth == 0
	})
	if err != nil {
		return nil, fmt.Errorf("resync: %w", err)
	}
	res.Resync = time.Since(start)
	st := p.mustStats()
	// The CRD's CA bundle, written by the process as it starts, is no
	// CR's (crWritesOf).
	res.ResyncWrites, res.ResyncRenders = crWritesOf(st.Counts), st.Renders
	res.idleStart = time.Now()
	return res, nil
}

// endIdle ends the idle period of p, begun when its resync ended.
func (res *steadyResult) endIdle(p *opProc) {
	res.Idle = time.Since(res.idleStart)
	res.Stats = p.mustStats()
	res.Counts, res.Reconciles = res.Stats.Counts, res.Stats.Reconciles
}

// reloadResult is cueop's hot reload of a template edit that relabels
// every Pod.
type reloadResult struct {
	Duration   time.Duration // every CR at the new revision, Reconciling=False, every Pod relabelled
	PodsDone   time.Duration // every Pod relabelled
	MinReady   int
	Counts     harness.Counts
	Revision   string
	PodsLabels int
}

const reloadLabel = "bench-reload"

// hotReload edits the templates of tmpl that the cueop process p serves
// (reloadEdit) and measures the hot reload: until every Pod is relabelled,
// every CR at the new revision and not Reconciling, and p settled.
func (c *comparison) hotReload(ctx context.Context, p *opProc, cr *crTracker, pods *podTracker, tmpl string) (reloadResult, error) {
	var res reloadResult
	file := filepath.Join(tmpl, "rediscluster", "rediscluster.cue")
	edited, revision, err := c.reloadEdit(file)
	if err != nil {
		return res, err
	}
	res.Revision = revision

	s0 := p.mustStats()
	cr.resetMin()
	start := time.Now()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(edited), 0o644); err != nil {
		return res, err
	}
	if err := os.Rename(tmp, file); err != nil {
		return res, err
	}
	want := 3 * c.cfg.N
	podsAt, err := waitFor(ctx, 15*time.Minute, func() bool {
		n, _ := pods.labelled(reloadLabel, "v1")
		return n == want
	})
	if err != nil {
		n, all := pods.labelled(reloadLabel, "v1")
		return res, fmt.Errorf("hot reload: %d of %d pods relabelled: %w", n, all, err)
	}
	res.PodsDone = podsAt.Sub(start)
	doneAt, err := waitFor(ctx, 15*time.Minute, func() bool {
		return cr.count(func(s crState) bool { return s.revision == res.Revision && s.reconciling == "False" }) == c.cfg.N
	})
	if err != nil {
		return res, fmt.Errorf("hot reload: CRs not at revision %s: %w", res.Revision, err)
	}
	res.Duration = doneAt.Sub(start)
	res.MinReady = cr.min()
	st, err := settle(ctx, p, time.Minute)
	if err != nil {
		return res, err
	}
	res.Counts = st.Counts.Sub(s0.Counts)
	return res, nil
}

// reloadEdit is the template file's text edited to relabel every Pod
// (label reloadLabel), and the revision the operator computes for it,
// from a scratch copy of the templates; file is left as it is.
func (c *comparison) reloadEdit(file string) (edited, revision string, err error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", "", err
	}
	old := `metadata: {name: "\(_name)-\(i)", labels: _selector}`
	edited = strings.Replace(string(src), old,
		`metadata: {name: "\(_name)-\(i)", labels: _selector & {"`+reloadLabel+`": "v1"}}`, 1)
	if edited == string(src) {
		return "", "", fmt.Errorf("%s: the Pod metadata line %q is gone: update the benchmark's edit", file, old)
	}
	// The new revision, as the operator computes it, from a scratch copy.
	scratch, err := c.templatesCopy()
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(scratch, "rediscluster", "rediscluster.cue"), []byte(edited), 0o644); err != nil {
		return "", "", err
	}
	set, err := template.Load(scratch)
	if err != nil {
		return "", "", err
	}
	revision = set.Lookup("cache.example.com", "RedisCluster").Revision
	_ = os.RemoveAll(scratch)
	return edited, revision, nil
}

// driftResult are the repair latencies of hand edits of a label an
// operator owns.
type driftResult struct {
	Op        string
	Latencies []time.Duration
}

func (r driftResult) quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.Latencies...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(i, len(s)-1)]
}

// drift edits label app of one Pod at a time (a merge patch by another
// field manager, as `kubectl label --overwrite` does) and measures the time
// from the edit until the watch shows the operator's value again.
func (c *comparison) drift(ctx context.Context, ns string, pods *podTracker) (driftResult, error) {
	var res driftResult
	for i := range c.cfg.Drift {
		name := fmt.Sprintf("%s-%d", crName((i*7919)%c.cfg.N), i%3)
		w := pods.watchLabel(name, "app")
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"app":"drifted-%d"}}}`, i))
		start := time.Now()
		pod, err := c.lab.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bench-drift"})
		if err != nil {
			return res, err
		}
		rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
		at, err := pods.await(ctx, name, w, rv, "redis", 30*time.Second)
		if err != nil {
			return res, err
		}
		res.Latencies = append(res.Latencies, at.Sub(start))
		time.Sleep(100 * time.Millisecond)
	}
	return res, nil
}
