package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// bombKind is a kind whose spec.size drives a comprehension three for
// clauses deep: size 28 takes seconds of CPU, far beyond the budgets the
// tests give, and still ends soon after a test is done with it (size 16
// rendered within 100 ms without -race on a quiet machine).
const bombKind = `package bomb
import "list"
resource: {group: "bomb.test.example", version: "v1", kind: "Bomb"}
#Spec: {size: *1 | int & >=0 & <=100}
parent: spec: #Spec
_cells: [for i in list.Range(0, parent.spec.size, 1) for j in list.Range(0, parent.spec.size, 1) for k in list.Range(0, parent.spec.size, 1) {i*j*k}]
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: cells: "\(len(_cells))"}
`

// TestRenderBudgetStallsHostileCR: a CR whose spec makes its render run out
// of budget is Stalled with reason RenderBudget; the operator keeps serving
// other CRs meanwhile; the hostile CR is not rendered again when it changes
// without a change of spec, and is when its spec changes.
func TestRenderBudgetStallsHostileCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	startBombs(t, ns, budget.Budget{Time: 100 * time.Millisecond, Memory: 256 << 20, MaxAbandoned: 2}, false)
	c := newClient(t)

	mustKubectl(t, bombYAML(ns, "hostile", 28), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		return bombStalled(t, ns, "hostile", "RenderBudget", "render evaluation budget exceeded", "bomb/bomb.cue:6:10 comprehension (3 nested for)")
	})

	// The operator goes on serving: a RedisCluster created now gets ready.
	readyRedis(t, c, ns, "good", 1)

	// A change that is not a spec change reconciles the hostile CR (the
	// controller's reconcile count goes up: the positive sign) without
	// rendering it again.
	renders, reconciles := metricSum(t, "cueop_render_duration_seconds", "kind", "Bomb"), metricSum(t, "controller_runtime_reconcile_total", "controller", "cueop-bomb")
	mustKubectl(t, "", "-n", ns, "annotate", "bomb/hostile", "poke=1")
	eventually(t, 30*time.Second, func() string {
		if n := metricSum(t, "controller_runtime_reconcile_total", "controller", "cueop-bomb"); n <= reconciles {
			return fmt.Sprintf("no reconcile of the Bomb after the annotation (%v)", n)
		}
		return ""
	})
	if n := metricSum(t, "cueop_render_duration_seconds", "kind", "Bomb"); n != renders {
		t.Errorf("the stalled Bomb was rendered again without a spec change: %v renders, was %v", n, renders)
	}
	if msg := bombStalled(t, ns, "hostile", "RenderBudget"); msg != "" {
		t.Errorf("after the annotation: %s", msg)
	}

	// A spec change renders it again.
	mustKubectl(t, "", "-n", ns, "patch", "bomb/hostile", "--type=merge", "-p", `{"spec":{"size":2}}`)
	eventually(t, 60*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "bomb/hostile", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil || out != "True" {
			return fmt.Sprintf("Ready = %q (%v)", out, err)
		}
		return ""
	})
	if n := metricSum(t, "cueop_render_duration_seconds", "kind", "Bomb"); n <= renders {
		t.Errorf("the spec change did not render the Bomb again (%v renders)", n)
	}
}

// TestRefusedRenderIsNotConverged (evaluating in process, where renders
// over budget are abandoned; workers kill them): another CR's renders of the same kind,
// over budget and still running, reach --render-max-abandoned, so a fresh
// CR's render is refused as busy. Meanwhile the fresh CR never reads
// Converged: Reconciling=True with reason RenderPending and a message
// saying why, Ready=Unknown, and kstatus does not call it Current. Once the
// abandoned render ends, the fresh CR is rendered and gets Ready.
func TestRefusedRenderIsNotConverged(t *testing.T) {
	ns := clustertest.Namespace(t)
	startBombs(t, ns, budget.Budget{Time: 300 * time.Millisecond, Memory: 256 << 20, MaxAbandoned: 1}, true)
	c := newClient(t)

	// Size 28: about 6 s of CPU (several times more with -race), abandoned
	// after 300 ms: still running when the fresh CR comes, however loaded
	// the machine (size 20, 2 s, ended first on a loaded one).
	mustKubectl(t, bombYAML(ns, "hostile", 28), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return bombStalled(t, ns, "hostile", "RenderBudget") })
	if budget.Abandoned("bomb") < 1 {
		t.Fatal("the hostile render ended before the fresh CR was created: give it a larger size")
	}
	mustKubectl(t, bombYAML(ns, "fresh", 1), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		o := object(t, c, bombGVK, ns, "fresh")
		if msg := conditionIs(o, "Reconciling", "True", wellknown.ReasonRenderPending, "earlier evaluations that exceeded their budget are still running"); msg != "" {
			return msg
		}
		if msg := conditionIs(o, "Ready", "Unknown", wellknown.ReasonRenderPending, "render not run"); msg != "" {
			return msg
		}
		if res, err := kstatus.Compute(o); err != nil || res.Status == kstatus.CurrentStatus {
			return fmt.Sprintf("kstatus %v (%v) while its render is refused", res, err)
		}
		return ""
	})
	if budget.Abandoned("bomb") < 1 {
		t.Fatal("the hostile render ended before the fresh CR's status was checked: give it a larger size")
	}

	waitBombsEnded(t)
	eventually(t, 2*time.Minute, func() string {
		return conditionIs(object(t, c, bombGVK, ns, "fresh"), "Ready", "True", wellknown.ReasonReady, "")
	})
}

var bombGVK = schema.GroupVersionKind{Group: "bomb.test.example", Version: "v1", Kind: "Bomb"}

// startBombs runs an operator on the project's templates and the Bomb kind,
// serving ns within budget b, until the test ends; the test then waits for
// the renders it abandoned to end.
// startBombs serves the Bomb kind beside the project's templates, with
// budget b; inProcess evaluates in the operator's process (where an
// evaluation over budget is abandoned, not killed).
func startBombs(t *testing.T, ns string, b budget.Budget, inProcess bool) {
	t.Helper()
	dir := copyTemplates(t)
	testkit.WriteKind(t, dir, "bomb", bombKind)
	opts := operatortest.Options(dir, ns)
	opts.Budget, opts.InProcess = b, inProcess
	operatortest.Start(t, clustertest.Config(), opts)
	t.Cleanup(func() { waitBombsEnded(t) })
	waitCRD(t)
	eventually(t, 60*time.Second, func() string {
		if _, err := kubectl(t, "", "get", "crd", "bombs.bomb.test.example"); err != nil {
			return "Bomb CRD not installed"
		}
		return ""
	})
}

func bombYAML(ns, name string, size int) string {
	return fmt.Sprintf("apiVersion: bomb.test.example/v1\nkind: Bomb\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  size: %d\n", name, ns, size)
}

// bombStalled says why Bomb ns/name is not Stalled with reason and a
// message holding every part, or "".
func bombStalled(t *testing.T, ns, name, reason string, parts ...string) string {
	out, err := kubectl(t, "", "-n", ns, "get", "bomb/"+name, "-o",
		`jsonpath={.status.conditions[?(@.type=="Stalled")].status}|{.status.conditions[?(@.type=="Stalled")].reason}|{.status.conditions[?(@.type=="Stalled")].message}`)
	if err != nil {
		return err.Error()
	}
	want := "True|" + reason + "|"
	if !strings.HasPrefix(out, want) {
		return "Stalled status|reason|message = " + out
	}
	for _, p := range parts {
		if !strings.Contains(out, p) {
			return fmt.Sprintf("Stalled message %q lacks %q", out, p)
		}
	}
	return ""
}

// waitBombsEnded waits until the renders the test abandoned have ended.
func waitBombsEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	budget.WaitAbandoned(ctx, "bomb", 0)
}
