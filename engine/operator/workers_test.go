package operator_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// startHostile runs an operator serving namespace ns (every namespace
// when ""), in worker processes, on a templates directory holding the
// hostile kind (workertest.HostileKind) and returns the directory. The
// Hostile CRD is deleted at the end.
func startHostile(t *testing.T, ns string, b budget.Budget) string {
	t.Helper()
	dir, _ := startHostileObserved(t, ns, b)
	return dir
}

// startHostileObserved is startHostile, with the operator's activity (its
// log lines and writes).
func startHostileObserved(t *testing.T, ns string, b budget.Budget) (string, *operatortest.Activity) {
	t.Helper()
	dir := workertest.Templates(t, map[string]string{"hostile/hostile.cue": workertest.HostileKind})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "hostiles.hostile.test.example", "--ignore-not-found") })
	opts := operatortest.Options(dir, ns)
	opts.Budget = b
	a, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "hostiles.hostile.test.example")
	return dir, a
}

// applyHostile creates the Hostile ns/name with spec.
func applyHostile(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	obj, err := json.Marshal(map[string]any{
		"apiVersion": "hostile.test.example/v1", "kind": "Hostile",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	})
	must(t, err)
	mustKubectl(t, string(obj), "apply", "--server-side", "-f", "-")
}

// hostileCondition says why condition cond of Hostile ns/name is not
// status with a message holding every part, or "".
func hostileCondition(t *testing.T, ns, name, cond, status string, parts ...string) string {
	out, err := kubectl(t, "", "-n", ns, "get", "hostile/"+name, "-o",
		fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)].status}|{.status.conditions[?(@.type==%q)].reason}|{.status.conditions[?(@.type==%q)].message}`, cond, cond, cond))
	if err != nil {
		return err.Error()
	}
	if !strings.HasPrefix(out, status+"|") {
		return fmt.Sprintf("%s status|reason|message = %s", cond, out)
	}
	for _, p := range parts {
		if !strings.Contains(out, p) {
			return fmt.Sprintf("%s message %q lacks %q", cond, out, p)
		}
	}
	return ""
}

// TestTenantFatalAllocationSparesOperator: a CR at its schema's bounds
// makes its render allocate a terabyte at once (fatal for a Go process):
// the worker dies, the CR is Stalled RenderBudget naming the crash and what
// the render used, and the operator goes on serving: another CR of the same
// kind converges.
func TestTenantFatalAllocationSparesOperator(t *testing.T) {
	ns := clustertest.Namespace(t)
	startHostile(t, ns, budget.Budget{})
	applyHostile(t, ns, "bomb", workertest.BombSpec())
	eventually(t, 120*time.Second, func() string {
		return hostileCondition(t, ns, "bomb", "Stalled", "True", "RenderBudget", "render crashed its worker (", "out of memory", "of CPU")
	})
	applyHostile(t, ns, "fine", map[string]any{"count": 2})
	eventually(t, 60*time.Second, func() string { return hostileCondition(t, ns, "fine", "Ready", "True") })
}

// TestTemplateBombRefusedOnReload: a package that allocates a terabyte
// when compiled, dropped into the templates directory of a running
// operator, crashes a worker's compile and is refused; the operator goes
// on serving the other kind.
func TestTemplateBombRefusedOnReload(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := startHostile(t, ns, budget.Budget{})
	errs := metricSum(t, "cueop_template_load_errors_total")
	workertest.WriteFile(t, dir, "templatebomb/bomb.cue", workertest.TemplateBomb)
	eventually(t, 120*time.Second, func() string {
		if n := metricSum(t, "cueop_template_load_errors_total"); n <= errs {
			return "no load error after the template bomb"
		}
		return ""
	})
	applyHostile(t, ns, "fine", nil)
	eventually(t, 60*time.Second, func() string { return hostileCondition(t, ns, "fine", "Ready", "True") })
	if out, err := kubectl(t, "", "get", "crd", "templatebombs.templatebomb.test.example", "--ignore-not-found"); err != nil || out != "" {
		t.Errorf("the template bomb's CRD was installed: %q (%v)", out, err)
	}
}

// TestSlowTenantDoesNotDelayAnother: one tenant's renders that would take
// hours hold at most that tenant's share of the workers; another tenant's
// CR of the same kind converges meanwhile, while the slow ones are still
// running (not yet stalled by their budget).
func TestSlowTenantDoesNotDelayAnother(t *testing.T) {
	slowNS, quickNS := clustertest.Namespace(t), clustertest.Namespace(t)
	startHostile(t, "", budget.Budget{Time: 20 * time.Second, Memory: -1})
	applyHostile(t, slowNS, "slow-1", workertest.SlowSpec())
	applyHostile(t, slowNS, "slow-2", workertest.SlowSpec())
	applyHostile(t, quickNS, "quick", nil)
	eventually(t, 60*time.Second, func() string { return hostileCondition(t, quickNS, "quick", "Ready", "True") })
	for _, name := range []string{"slow-1", "slow-2"} {
		if why := hostileCondition(t, slowNS, name, "Stalled", "True"); why == "" {
			t.Errorf("%s stalled before the quick CR converged: it did not wait for the slow renders to end", name)
		}
	}
}

// TestOverBudgetRendersLeaveNothingRunning: two renders of one tenant that
// run out of their budget are stalled and their workers killed, not left
// running abandoned: another tenant's CR of the kind created after them
// converges (before: the kind had --render-max-abandoned renders running for
// hours and refused every other render of it as Busy).
func TestOverBudgetRendersLeaveNothingRunning(t *testing.T) {
	slowNS, quickNS := clustertest.Namespace(t), clustertest.Namespace(t)
	startHostile(t, "", budget.Budget{Time: 500 * time.Millisecond, Memory: -1})
	for _, name := range []string{"slow-1", "slow-2"} {
		applyHostile(t, slowNS, name, workertest.SlowSpec())
	}
	for _, name := range []string{"slow-1", "slow-2"} {
		eventually(t, 120*time.Second, func() string {
			return hostileCondition(t, slowNS, name, "Stalled", "True", "RenderBudget", "of CPU")
		})
	}
	applyHostile(t, quickNS, "quick", nil)
	eventually(t, 60*time.Second, func() string { return hostileCondition(t, quickNS, "quick", "Ready", "True") })
}

// TestSlowBadCompilesDoNotRefuseFix: two template edits whose compiles
// would take hours are killed in their workers at the compile budget and
// refused; the administrator's fix that follows is served, not refused as
// busy with them.
func TestSlowBadCompilesDoNotRefuseFix(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := startHostile(t, ns, budget.Budget{Time: 300 * time.Millisecond})
	applyHostile(t, ns, "cr", nil)
	eventually(t, 60*time.Second, func() string { return hostileCondition(t, ns, "cr", "Ready", "True") })
	errs := metricSum(t, "cueop_template_load_errors_total")
	for i := range 2 {
		slow := fmt.Sprintf("\n_slow%d: len([for a in list.Range(0, 2000, 1) for b in list.Range(0, 2000, 1) for c in list.Range(0, 2000, 1) if a+b+c < 0 {a}])\n", i)
		workertest.WriteFile(t, dir, "hostile/hostile.cue", workertest.HostileKind+slow)
		eventually(t, 120*time.Second, func() string {
			if n := metricSum(t, "cueop_template_load_errors_total"); n <= errs+float64(i) {
				return fmt.Sprintf("slow edit %d not refused yet", i)
			}
			return ""
		})
	}
	workertest.WriteFile(t, dir, "hostile/hostile.cue", strings.Replace(workertest.HostileKind, "status: lines: parent.spec.count", "status: {lines: parent.spec.count, fixed: true}", 1))
	eventually(t, 120*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "hostile/cr", "-o", "jsonpath={.status.fixed}")
		if err != nil || out != "true" {
			return fmt.Sprintf("status.fixed = %q (%v): the fix is not served", out, err)
		}
		return ""
	})
}

// TestBusyForAMomentWritesNoStatus: while one CR's slow render holds its
// tenant's share of the workers (2 workers: a share of 1), another CR of
// the same namespace is refused as busy and retried: it is not written a
// status saying that it waits (a write now, and another once rendered),
// and converges once the slow render is killed at its 3 s budget.
func TestBusyForAMomentWritesNoStatus(t *testing.T) {
	ns := clustertest.Namespace(t)
	_, activity := startHostileObserved(t, ns, budget.Budget{Time: 3 * time.Second, Memory: -1})
	w := watchHostile(t, ns, "quick")
	errors := metricSum(t, "cueop_render_duration_seconds", "kind", "Hostile", "result", "error")

	applyHostile(t, ns, "hog", workertest.SlowSpec())
	eventually(t, 60*time.Second, func() string { // hog's reconcile, its render under way
		if n := metricSum(t, "controller_runtime_active_workers", "controller", "cueop-hostile"); n < 1 {
			return "hog's reconcile not under way"
		}
		return ""
	})
	applyHostile(t, ns, "quick", nil)
	eventually(t, 90*time.Second, func() string { return hostileCondition(t, ns, "quick", "Ready", "True") })
	if got := hostileCondition(t, ns, "hog", "Stalled", "True", "RenderBudget"); got != "" {
		t.Fatalf("hog: %s: its render was not the slow one the test meant", got)
	}
	// Refused as busy at least once: a render error besides hog's.
	if n := metricSum(t, "cueop_render_duration_seconds", "kind", "Hostile", "result", "error"); n < errors+2 {
		t.Fatalf("%v render errors of Hostile, want hog's and at least one busy refusal of quick: the test did not make quick wait", n-errors)
	}
	for _, msg := range w.messages() {
		if strings.Contains(msg, "waits its turn") {
			t.Errorf("quick was written a status while busy for a moment: %q", msg)
		}
	}
	// Waiting for its share is a state, not an error: no error is logged.
	for _, l := range activity.Logged("Reconciler error", "name", "quick") {
		t.Errorf("a busy refusal of quick was logged as an error: %v", l.Values["error"])
	}
}

// statusWatch records the condition messages of every version of one CR.
type statusWatch struct {
	mu   sync.Mutex
	msgs []string
}

func (w *statusWatch) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// watchHostile watches Hostile ns/name, from before it exists, until the
// test ends.
func watchHostile(t *testing.T, ns, name string) *statusWatch {
	t.Helper()
	dc, err := dynamic.NewForConfig(clustertest.Config())
	must(t, err)
	gvr := schema.GroupVersionResource{Group: "hostile.test.example", Version: "v1", Resource: "hostiles"}
	wi, err := dc.Resource(gvr).Namespace(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	must(t, err)
	t.Cleanup(wi.Stop)
	w := &statusWatch{}
	go func() {
		for ev := range wi.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			w.mu.Lock()
			for _, c := range conds {
				if m, _ := c.(map[string]any); m != nil {
					w.msgs = append(w.msgs, fmt.Sprint(m["message"]))
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}
