package operatortest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cueop/cueop/engine/operator"
)

// Quiet is how long Settled wants an operator to have done nothing. A
// reconcile's writes cause watch events, and the reconciles they enqueue
// start within milliseconds on an idle machine; Quiet leaves room for the
// scheduling delays of a loaded 2-core machine running the race detector.
// On a machine loaded far beyond its cores the watch events themselves can
// come seconds late (up to 9 s seen at a load average of 25): where a late
// event would matter, wait for Caught first.
const Quiet = 3 * time.Second

// Activity follows what one operator does, to tell when it has settled: its
// reconciles, from the log lines controller-runtime writes at V(5) when one
// starts ("Reconciling") and ends ("Reconcile successful", "Reconcile done,
// ...", "Reconciler error"); the messages it logs; and the requests it sends
// that write. Observe sets it up.
type Activity struct {
	mu             sync.Mutex
	inFlight       int
	started        int
	ended          int
	lastReconcile  time.Time
	writes         int
	writesInFlight int
	lastWrite      time.Time
	logs           []LogLine
	done           []map[string]string // the log values of each reconcile ended
	changed        chan struct{}       // closed at the next change, for waiters

	// Operator is the operator followed, when StartObserved started it.
	Operator *operator.Operator
}

// LogLine is one message an operator logged (below V(5)), with its
// key/value pairs as text.
type LogLine struct {
	Msg    string
	Values map[string]string
	At     time.Time
}

// Observe sets opts (its manager's logger) and a copy of cfg (its
// transport) up for the returned Activity to follow the operator built with
// them; the operator's log still reaches controller-runtime's logger.
func Observe(cfg *rest.Config, opts *operator.Options) (*rest.Config, *Activity) {
	return ObserveManager(cfg, &opts.Manager)
}

// ObserveManager is Observe for any controller-runtime manager: the
// Activity follows the controllers of the manager built with opts and the
// returned config.
func ObserveManager(cfg *rest.Config, opts *ctrl.Options) (*rest.Config, *Activity) {
	a := &Activity{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &writeCounter{rt: rt, a: a} })
	inner := opts.Logger
	if inner.GetSink() == nil {
		inner = ctrllog.Log
	}
	opts.Logger = logr.New(&activitySink{a: a, inner: inner})
	return cfg, a
}

// StartObserved is Start with an Activity following the operator;
// Activity.Operator is the operator started.
func StartObserved(t testing.TB, cfg *rest.Config, opts operator.Options) (*Activity, func()) {
	t.Helper()
	cfg, a := Observe(cfg, &opts)
	op, err := operator.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	a.Operator = op
	t.Cleanup(func() { a.reportOnFailure(t) })
	return a, Run(t, op)
}

// reportTail is how many of its last log lines a failed test shows of each
// operator it observed.
const reportTail = 40

// reportOnFailure shows, when t failed, what the operator logged last
// (its reconciles' errors included), so that a failure seen once on a
// loaded machine says what the operator was doing.
func (a *Activity) reportOnFailure(t testing.TB) {
	if !t.Failed() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	logs := a.logs[max(0, len(a.logs)-reportTail):]
	t.Logf("the operator's last %d log lines of %d (%d reconciles ended, %d writes):", len(logs), len(a.logs), a.ended, a.writes)
	for _, l := range logs {
		t.Logf("  %s %s %v", l.At.Format("15:04:05.000"), l.Msg, l.Values)
	}
	var failed []map[string]string
	for _, d := range a.done {
		if d["error"] != "" {
			failed = append(failed, d)
		}
	}
	for _, d := range failed[max(0, len(failed)-10):] {
		t.Logf("  reconcile failed: %v", d)
	}
}

// Caught says why the operator's caches do not hold obj as the API server
// has it now, or "": the positive sign that every watch event of obj,
// those of the operator's own writes included, has reached the operator.
// The cache asked is its cache of CRs when its kind is served, else that
// of children; obj must be of a kind that cache already watches, typed
// when the operator caches the kind typed (a built-in kind), or the cache
// starts a new watch for it.
func (a *Activity) Caught(c client.Client, obj client.Object) string {
	ctx := context.Background()
	key := client.ObjectKeyFromObject(obj)
	live := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, key, live); err != nil {
		return fmt.Sprintf("%T %s: %v", obj, key, err)
	}
	cache := a.Operator.Manager().GetCache()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		for _, p := range a.Operator.Progress() {
			if p.Kind == u.GetKind() {
				cache = a.Operator.Parents()
			}
		}
	}
	cached := obj.DeepCopyObject().(client.Object)
	if err := cache.Get(ctx, key, cached); err != nil {
		return fmt.Sprintf("%T %s not in the operator's cache: %v", obj, key, err)
	}
	if cached.GetResourceVersion() != live.GetResourceVersion() {
		return fmt.Sprintf("the operator's cache holds %T %s at resourceVersion %s, the API server at %s", obj, key, cached.GetResourceVersion(), live.GetResourceVersion())
	}
	return ""
}

// Reconciles is the number of reconciles that ended so far.
func (a *Activity) Reconciles() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ended
}

// ReconcilesOf is the number of reconciles that ended so far whose log
// values hold every key/value pair of kv: "controller", "cueop-<package>"
// for those of one kind, "namespace" and "name" for those of one CR.
func (a *Activity) ReconcilesOf(kv ...string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, v := range a.done {
		if matches(v, kv) {
			n++
		}
	}
	return n
}

func matches(values map[string]string, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if values[kv[i]] != kv[i+1] {
			return false
		}
	}
	return true
}

// Writes is the number of write requests sent so far (every method but GET,
// HEAD and OPTIONS).
func (a *Activity) Writes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.writes
}

// Busy says what the operator has been doing within the last quiet, or ""
// when it has no reconcile and no write under way and neither ended within
// quiet.
func (a *Activity) Busy(quiet time.Duration) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busyLocked(quiet)
}

func (a *Activity) busyLocked(quiet time.Duration) string {
	switch {
	case a.inFlight > 0:
		return fmt.Sprintf("%d reconciles under way (%d ended so far)", a.inFlight, a.ended)
	case a.writesInFlight > 0:
		return fmt.Sprintf("%d write requests under way", a.writesInFlight)
	}
	last := a.lastReconcile
	what := "reconcile"
	if a.lastWrite.After(last) {
		last, what = a.lastWrite, "write request"
	}
	if since := time.Since(last); !last.IsZero() && since < quiet {
		return fmt.Sprintf("last %s ended %s ago (%d reconciles, %d writes so far)", what, since.Round(time.Millisecond), a.ended, a.writes)
	}
	return ""
}

// Settled waits until the operator has settled: no reconcile and no write
// request under way, and none ended for quiet (Quiet when 0), counted from
// the call at the earliest, so that what happened before it has quiet to
// show. It is the positive sign of quiet a "nothing happens" window starts
// from; it cannot see a retry held back by the rate limiter for longer
// than quiet. It fails the test with what the operator was doing when
// timeout passes.
func (a *Activity) Settled(t testing.TB, quiet, timeout time.Duration) {
	t.Helper()
	if quiet == 0 {
		quiet = Quiet
	}
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		a.mu.Lock()
		why, changed := a.busyLocked(quiet), a.changedLocked()
		// Unless something happens first, the quiet is complete at
		// quietEnd: wake then to look again.
		quietEnd := start
		if a.lastReconcile.After(quietEnd) {
			quietEnd = a.lastReconcile
		}
		if a.lastWrite.After(quietEnd) {
			quietEnd = a.lastWrite
		}
		quietEnd = quietEnd.Add(quiet)
		a.mu.Unlock()
		if why == "" && time.Since(start) < quiet {
			why = "waiting " + quiet.String() + " from the call"
		}
		if why == "" {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("operator not settled within %s: %s", timeout, why)
		}
		wake := deadline
		if time.Now().Before(quietEnd) && quietEnd.Before(deadline) {
			wake = quietEnd
		}
		a.wait(changed, wake)
	}
}

// changedLocked is a channel closed at the next change the Activity sees.
// The caller holds a.mu.
func (a *Activity) changedLocked() <-chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// notifyLocked wakes the waiters on changedLocked. The caller holds a.mu.
func (a *Activity) notifyLocked() {
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// wait waits until changed is closed or until is reached.
func (a *Activity) wait(changed <-chan struct{}, until time.Time) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case <-changed:
	case <-timer.C:
	}
}

// Logged returns the messages logged so far that contain msg and carry
// every key/value pair of kv (key, value, key, value, ...).
func (a *Activity) Logged(msg string, kv ...string) []LogLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []LogLine
	for _, l := range a.logs {
		if strings.Contains(l.Msg, msg) && matches(l.Values, kv) {
			out = append(out, l)
		}
	}
	return out
}

// WaitLog waits until the operator logged a message containing msg with
// every key/value pair of kv, and fails the test after timeout.
func (a *Activity) WaitLog(t testing.TB, timeout time.Duration, msg string, kv ...string) LogLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a.mu.Lock()
		changed := a.changedLocked()
		a.mu.Unlock()
		if got := a.Logged(msg, kv...); len(got) > 0 {
			return got[0]
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("the operator did not log %q %v within %s", msg, kv, timeout)
		}
		a.wait(changed, deadline)
	}
}

func (a *Activity) logged(level int, msg string, values map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.notifyLocked()
	switch {
	case msg == "Reconciling":
		a.inFlight++
		a.started++
		a.lastReconcile = time.Now()
	case msg == "Reconcile successful", msg == "Reconciler error", strings.HasPrefix(msg, "Reconcile done"):
		a.inFlight--
		a.ended++
		a.lastReconcile = time.Now()
		a.done = append(a.done, values)
	case level < 5:
		a.logs = append(a.logs, LogLine{Msg: msg, Values: values, At: time.Now()})
	}
}

// writeCounter counts an operator's write requests for its Activity.
type writeCounter struct {
	rt http.RoundTripper
	a  *Activity
}

func (w *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return w.rt.RoundTrip(req)
	}
	a := w.a
	a.mu.Lock()
	a.writesInFlight++
	a.notifyLocked()
	a.mu.Unlock()
	resp, err := w.rt.RoundTrip(req)
	a.mu.Lock()
	a.writesInFlight--
	a.writes++
	a.lastWrite = time.Now()
	a.notifyLocked()
	a.mu.Unlock()
	return resp, err
}

// activitySink tells an Activity what the operator logs and passes it on
// to inner.
type activitySink struct {
	a      *Activity
	inner  logr.Logger
	values []any
}

func (s *activitySink) Init(logr.RuntimeInfo) {}

// Enabled is true at every level: the V(5) lines of reconciles are needed.
func (s *activitySink) Enabled(int) bool { return true }

func (s *activitySink) Info(level int, msg string, kv ...any) {
	switch {
	case msg == "Reconciling":
		s.a.logged(5, msg, nil)
	case strings.HasPrefix(msg, "Reconcile "):
		s.a.logged(5, msg, s.text(nil))
	default:
		s.a.logged(level, msg, s.text(kv))
	}
	if l := s.inner.V(level); l.Enabled() {
		l.Info(msg, kv...)
	}
}

func (s *activitySink) Error(err error, msg string, kv ...any) {
	if msg == "Reconciler error" {
		vals := s.text(nil)
		vals["error"] = fmt.Sprint(err)
		s.a.logged(5, msg, vals)
	} else {
		vals := s.text(kv)
		vals["error"] = fmt.Sprint(err)
		s.a.logged(0, msg, vals)
	}
	s.inner.Error(err, msg, kv...)
}

func (s *activitySink) WithValues(kv ...any) logr.LogSink {
	return &activitySink{a: s.a, inner: s.inner.WithValues(kv...), values: append(append([]any(nil), s.values...), kv...)}
}

func (s *activitySink) WithName(name string) logr.LogSink {
	return &activitySink{a: s.a, inner: s.inner.WithName(name), values: s.values}
}

func (s *activitySink) text(kv []any) map[string]string {
	m := map[string]string{}
	for _, list := range [][]any{s.values, kv} {
		for i := 0; i+1 < len(list); i += 2 {
			m[fmt.Sprint(list[i])] = fmt.Sprint(list[i+1])
		}
	}
	return m
}
