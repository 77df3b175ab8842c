package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// addSharedStatusKind adds to dir the kind SharedStatus: the RedisCluster
// template under another group and kind, whose #Status also declares
// `note`, a field the template never sets, for other writers of the status.
func addSharedStatusKind(t *testing.T, dir string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "rediscluster", "rediscluster.cue"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, r := range [][2]string{
		{"package rediscluster", "package sharedstatus"},
		{`group:   "cache.example.com"`, `group:   "faults.example.com"`},
		{`kind:    "RedisCluster"`, `kind:    "SharedStatus"`},
		{`shortNames: ["redis", "rdc"]`, ``},
		{`categories: ["cueop", "cache"]`, ``},
		{"#Status: {\n", "#Status: {\n\t// Written by another field manager, never by the template.\n\tnote?: string\n"},
		// Left to render (the CRD would refuse <=replicas with a CEL rule),
		// so that a spec change can stall the CR.
		{"<=replicas\n", "<=parent.spec.replicas\n"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("rediscluster.cue has no %q", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	writeKind(t, dir, "sharedstatus", s)
	conf, err := os.ReadFile(filepath.Join(dir, "rediscluster", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sharedstatus", "redis.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// serveSharedStatus runs an operator, its requests counted, on a copy of
// the project's templates with the kind SharedStatus added, serving a new
// namespace ns of the shared control plane e, until the test ends, and
// waits until SharedStatus's CRD is established.
func serveSharedStatus(t *testing.T) (ns string, e *env, act *operatortest.Activity, ct *testkit.Requests) {
	t.Helper()
	ns, e = clustertest.Namespace(t), sharedEnv(t)
	dir := copyTemplates(t)
	addSharedStatusKind(t, dir)
	cfg, ct := testkit.CountRequests(e.cfg)
	act = startOperator(t, e, dir, ns, cfg)
	e.waitCRD(t, sharedGVK)
	return ns, e, act, ct
}

// statusOwners maps each field manager of the status subresource to the
// top-level status fields it owns.
func statusOwners(cr *unstructured.Unstructured) map[string][]string {
	owners := map[string][]string{}
	for _, mf := range cr.GetManagedFields() {
		if mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		s := string(mf.FieldsV1.Raw)
		for _, f := range []string{"conditions", "note", "observedGeneration", "phase", "readyReplicas", "revision", "selector"} {
			if strings.Contains(s, `"f:`+f+`"`) {
				owners[mf.Manager] = append(owners[mf.Manager], f)
			}
		}
	}
	return owners
}

// TestConcurrentStatusWriter has another field manager apply status.note
// of 20 converging CRs through the status subresource, over and over,
// while cueop writes their status. cueop writes its status with
// server-side apply and no resourceVersion, so no write of either side
// meets a 409 Conflict, cueop's status (readyReplicas, phase, conditions,
// observedGeneration) converges, and the other manager's field stays as it
// last wrote it.
func TestConcurrentStatusWriter(t *testing.T) {
	t.Parallel()
	ns, e, act, ct := serveSharedStatus(t)

	var b strings.Builder
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("s-%d", i))
		fmt.Fprintf(&b, "---\napiVersion: faults.example.com/v1\nkind: SharedStatus\nmetadata:\n  name: s-%d\n  namespace: %s\nspec:\n  replicas: 3\n", i, ns)
	}
	e.mustKubectl(t, b.String(), "apply", "-f", "-")
	want := uniform(names, 3)

	// The other writer: four workers, each applying status.note of five
	// CRs in turn, as fast as the API server takes them, until told to stop.
	var (
		stop      atomic.Bool
		writes    atomic.Int64
		conflicts atomic.Int64
		mu        sync.Mutex
		failures  []error
		last      = map[string]string{} // the note last written to each CR
		wg        sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; !stop.Load(); r++ {
				for _, name := range names[w*5 : w*5+5] {
					note := fmt.Sprintf("round-%d", r)
					obj := &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": "faults.example.com/v1", "kind": "SharedStatus",
						"metadata": map[string]any{"name": name, "namespace": ns},
						"status":   map[string]any{"note": note},
					}}
					err := e.c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("status-writer"))
					writes.Add(1)
					mu.Lock()
					if err != nil {
						failures = append(failures, err)
						if strings.Contains(err.Error(), "conflict") {
							conflicts.Add(1)
						}
					} else {
						last[name] = note
					}
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	eventually(t, 120*time.Second, func() string { return sharedReady(t, e, ns, want) })
	t.Logf("20 SharedStatus converged in %s under %d foreign status applies", time.Since(start).Round(time.Millisecond), writes.Load())
	// Keep both writers going a little longer: two more rounds of the
	// other writer over every CR after convergence.
	w0 := writes.Load()
	eventually(t, 60*time.Second, func() string {
		if n := writes.Load() - w0; n < int64(2*len(names)) {
			return fmt.Sprintf("the other writer applied %d statuses since convergence, want %d", n, 2*len(names))
		}
		return ""
	})
	stop.Store(true)
	wg.Wait()

	if len(failures) > 0 {
		t.Errorf("%d of the other writer's status applies failed (%d conflicts); first: %v", len(failures), conflicts.Load(), failures[0])
	}
	if n := ct.Answered(409); n > 0 {
		t.Errorf("cueop got %d 409 Conflict responses", n)
	}
	eventually(t, 60*time.Second, func() string { return sharedReady(t, e, ns, want) })
	eventually(t, 60*time.Second, func() string { return e.checkChildren(t, ns, sharedGVK, want) })
	for _, name := range names {
		cr := e.mustGet(t, sharedGVK, ns, name)
		if note, _, _ := unstructured.NestedString(cr.Object, "status", "note"); note != last[name] {
			t.Errorf("%s: status.note = %q, want the other writer's last %q", name, note, last[name])
		}
		owners := statusOwners(cr)
		if got := strings.Join(owners["status-writer"], ","); got != "note" {
			t.Errorf("%s: status-writer owns %q, want note alone", name, got)
		}
		if got := strings.Join(owners["cueop"], ","); got != "conditions,observedGeneration,phase,readyReplicas,revision,selector" {
			t.Errorf("%s: cueop owns %q of the status, want every field but note", name, got)
		}
	}
	t.Logf("%d foreign status applies, no conflict on either side; cueop's writes: %d", writes.Load(), ct.WriteCount())

	// Once converged, a foreign status change costs cueop at most one
	// status write of that CR (a no-op apply today, see docs/reliability.md)
	// and nothing else: the writers do not wake each other up.
	act.Settled(t, 0, 2*time.Minute)
	n0 := ct.WriteCount()
	r0 := map[string]int{}
	for _, name := range names[:5] {
		r0[name] = act.ReconcilesOf("name", name)
	}
	for _, name := range names[:5] {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "faults.example.com/v1", "kind": "SharedStatus",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"status":   map[string]any{"note": "final"},
		}}
		if err := e.c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("status-writer")); err != nil {
			t.Fatal(err)
		}
	}
	// Each change's event reconciles its CR; once the operator settled
	// after them, whatever they cost is written.
	eventually(t, 60*time.Second, func() string {
		for _, name := range names[:5] {
			if act.ReconcilesOf("name", name) == r0[name] {
				return name + " not reconciled after its foreign status change"
			}
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	after := testkit.Strings(ct.Writes(n0))
	t.Logf("cueop's writes after 5 foreign status changes of converged CRs: %d", len(after))
	if len(after) > 5 {
		t.Errorf("%d writes after 5 foreign status changes, want at most one status write each: %v", len(after), after)
	}
	for _, w := range after {
		if !strings.HasPrefix(w, "PATCH ") || !strings.HasSuffix(w, "/status") {
			t.Errorf("unexpected write after a foreign status change: %s", w)
		}
	}
}

// sharedReady says which SharedStatus of want is not converged, or "".
func sharedReady(t *testing.T, e *env, ns string, want map[string]int) string {
	t.Helper()
	for _, name := range sortedKeys(want) {
		cr, err := e.get(t, sharedGVK, ns, name)
		if err != nil {
			return err.Error()
		}
		if why := redisReady(cr, int64(want[name])); why != "" {
			return why
		}
	}
	return ""
}

// lagWatches returns a copy of cfg whose watches of resource (a plural)
// hand each chunk they read over d late: a cache they feed lags the API
// server by d.
func lagWatches(cfg *rest.Config, resource string, d time.Duration) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && path.Base(req.URL.Path) == resource {
				resp.Body = &lagReader{ReadCloser: resp.Body, d: d}
			}
			return resp, err
		})
	})
	return cfg
}

type lagReader struct {
	io.ReadCloser
	d time.Duration
}

func (r *lagReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		time.Sleep(r.d)
	}
	return n, err
}

// TestStatusWrittenOnceWhileCacheLags has the operator's watch of its CRs
// lag 2 s behind the API server. A new Waiter's first reconcile creates its
// ConfigMap and writes the status; the ConfigMap's event comes at once and
// reconciles the CR again while the cache still holds it without that
// status. That reconcile must not write the status again from the stale
// copy (resetting the conditions' lastTransitionTime, which the next one
// puts back): each status write changes the status, and a condition's
// lastTransitionTime moves only when its status changes.
func TestStatusWrittenOnceWhileCacheLags(t *testing.T) {
	t.Parallel()
	const lag = 2 * time.Second
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	dir := copyTemplates(t)
	writeKind(t, dir, "waiter", waiterTemplate)
	cfg, ct := testkit.CountRequests(lagWatches(e.cfg, "waiters", lag))
	act := startOperator(t, e, dir, ns, cfg)
	e.waitCRD(t, waiterGVK)
	e.mustKubectl(t, "apiVersion: faults.example.com/v1\nkind: Waiter\nmetadata: {name: lag, namespace: "+ns+"}\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return e.waiting(t, ns, "lag") })
	// Every status write's event reaches the operator lag late.
	act.Settled(t, lag+operatortest.Quiet, 2*time.Minute)

	statusPath := "/apis/faults.example.com/v1/namespaces/" + ns + "/waiters/lag/status"
	var writes []map[string]any
	var bodies []string
	for i, w := range ct.Writes(0) {
		if w.String() != "PATCH "+statusPath {
			continue
		}
		body := w.Body
		var obj struct {
			Status map[string]any `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatalf("status write %d: %v: %s", i, err, body)
		}
		writes = append(writes, obj.Status)
		bodies = append(bodies, body)
	}
	t.Logf("%d status writes", len(writes))
	for i := 1; i < len(writes); i++ {
		prev, cur := writes[i-1], writes[i]
		if fmt.Sprint(prev) == fmt.Sprint(cur) {
			t.Errorf("status write %d repeats the one before: %s", i+1, bodies[i])
		}
		for _, c := range cur["conditions"].([]any) {
			c := c.(map[string]any)
			for _, p := range prev["conditions"].([]any) {
				p := p.(map[string]any)
				if p["type"] == c["type"] && p["status"] == c["status"] && p["lastTransitionTime"] != c["lastTransitionTime"] {
					t.Errorf("status write %d moves the lastTransitionTime of %s=%s from %s to %s without a transition:\n%s\n%s",
						i+1, c["type"], c["status"], p["lastTransitionTime"], c["lastTransitionTime"], bodies[i-1], bodies[i])
				}
			}
		}
	}
	// "created 1; waiting for children to be ready", then "waiting for
	// children to be ready" once the ConfigMap is seen.
	if len(writes) > 2 {
		t.Errorf("%d status writes, want 2:\n%s", len(writes), strings.Join(bodies, "\n"))
	}
}

// TestForeignStatusLeftToItsOwner: cueop must neither copy nor compare
// status fields and conditions it does not set. Today (engine/reconcile
// status.go desiredStatus/sameStatus) it (1) re-applies every old status
// field when a CR stalls, taking co-ownership of another manager's field,
// whose owner then gets a 409 Conflict; (2) re-applies other managers'
// conditions, so their owner cannot remove them; (3) writes the status once
// per foreign status change.
func TestForeignStatusLeftToItsOwner(t *testing.T) {
	t.Parallel()
	ns, e, act, ct := serveSharedStatus(t)
	e.mustKubectl(t, "apiVersion: faults.example.com/v1\nkind: SharedStatus\nmetadata:\n  name: fs\n  namespace: "+ns+"\nspec:\n  replicas: 2\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return sharedReady(t, e, ns, map[string]int{"fs": 2}) })
	foreign := func(status map[string]any) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "faults.example.com/v1", "kind": "SharedStatus",
			"metadata": map[string]any{"name": "fs", "namespace": ns}, "status": status}}
		return e.c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("status-writer"))
	}
	backup := map[string]any{"type": "example.com/Backup", "status": "True", "reason": "Done", "message": "backed up", "lastTransitionTime": "2026-01-01T00:00:00Z"}
	act.Settled(t, 0, 2*time.Minute)
	n0, r0 := ct.WriteCount(), act.ReconcilesOf("name", "fs")
	if err := foreign(map[string]any{"note": "one", "conditions": []any{backup}}); err != nil {
		t.Fatal(err)
	}
	// The change's event reconciles the CR; once the operator settled after
	// it, whatever that reconcile would write is written.
	eventually(t, 60*time.Second, func() string {
		if act.ReconcilesOf("name", "fs") == r0 {
			return "no reconcile after the foreign status change"
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	if w := testkit.Strings(ct.Writes(n0)); len(w) != 0 {
		t.Errorf("cueop wrote %v after a foreign status change of a converged CR, want nothing", w)
	}

	// A status write of cueop (scale), then a stall.
	e.mustKubectl(t, "", "-n", ns, "scale", "sharedstatus/fs", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return sharedReady(t, e, ns, map[string]int{"fs": 3}) })
	e.mustKubectl(t, "", "-n", ns, "patch", "sharedstatus/fs", "--type=merge", "-p", `{"spec":{"minReady":5}}`)
	eventually(t, 60*time.Second, func() string {
		if s := conditionStatus(e.mustGet(t, sharedGVK, ns, "fs"), "Stalled"); s != "True" {
			return "Stalled=" + s
		}
		return ""
	})
	cr := e.mustGet(t, sharedGVK, ns, "fs")
	if got := strings.Join(statusOwners(cr)["cueop"], ","); strings.Contains(got, "note") {
		t.Errorf("cueop took co-ownership of status.note: owns %s", got)
	}
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager == "cueop" && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "example.com/Backup") {
			t.Errorf("cueop took co-ownership of the example.com/Backup condition")
		}
	}
	// The owner changes its field and removes its condition, unforced.
	r0 = act.ReconcilesOf("name", "fs")
	if err := foreign(map[string]any{"note": "two"}); err != nil {
		t.Errorf("the owner of status.note cannot change it any more: %v", err)
	}
	// The stalled CR is reconciled on the change and must not put the
	// removed condition back.
	eventually(t, 60*time.Second, func() string {
		if act.ReconcilesOf("name", "fs") == r0 {
			return "no reconcile after the foreign status change"
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	cr = e.mustGet(t, sharedGVK, ns, "fs")
	if c := condition(cr, "example.com/Backup"); c != nil {
		t.Errorf("the example.com/Backup condition survived its owner's removal: %v", c)
	}
}
