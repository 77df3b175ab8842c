package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// bombTemplate grows with its spec: size drives a comprehension three for
// clauses deep, doublings a string doubled that many times, repeat a
// list.Repeat (quadratic in CUE v0.17.1: 100000 take 76 s). Every size a
// test uses ends within a few seconds, with -race too, so that the
// evaluations a test abandons do not outlive it by much.
const bombTemplate = `package bomb
import "list"
resource: {group: "bomb.test.example", version: "v1", kind: "Bomb"}
#Spec: {size: *1 | int & >=0 & <=1000, doublings: *0 | int & >=0 & <=40, repeat: *0 | int & >=0}
parent: spec: #Spec
_cells: [for i in list.Range(0, parent.spec.size, 1) for j in list.Range(0, parent.spec.size, 1) for k in list.Range(0, parent.spec.size, 1) {i*j*k}]
_s: [string]: string
_s: "0": "x"
for i in list.Range(1, parent.spec.doublings+1, 1) { _s: "\(i)": _s["\(i-1)"] + _s["\(i-1)"] }
_r: list.Repeat(["a"], parent.spec.repeat)
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: {cells: "\(len(_cells))", s: "\(len(_s["\(parent.spec.doublings)"]))", r: "\(len(_r))"}}
`

func bombKind(t testing.TB) *template.Kind {
	t.Helper()
	k := compileKind(t, "bomb/bomb.cue", bombTemplate)
	t.Cleanup(func() { waitAbandoned(t, k.Name) })
	return k
}

// waitAbandoned waits until the evaluations a test abandoned have ended, so
// that they do not weigh on the tests after it.
func waitAbandoned(t testing.TB, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if left := budget.WaitAbandoned(ctx, key, 0); left > 0 {
		t.Errorf("%d abandoned evaluations of %s still run after 2 minutes", left, key)
	}
}

func bomb(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bomb.test.example/v1", "kind": "Bomb",
		"metadata": map[string]any{"name": "b", "namespace": "ns", "uid": "uid-b", "generation": int64(1)},
		"spec":     spec,
	}}
}

// TestRenderBudget: a spec that makes the template grow beyond the budget
// is refused with reason RenderBudget as soon as the budget runs out, and
// the error says which budget, the template revision and where the
// template can grow.
func TestRenderBudget(t *testing.T) {
	k := bombKind(t)
	// The CPU cases are sized to take several times the short budget
	// without the race detector too (about 0.2 s each), so that they do not
	// depend on its slowdown. The time budget of the memory cases is long, so that they run out of
	// memory (in shares with the evaluations abandoned before them) first.
	short := budget.Budget{Time: 50 * time.Millisecond, Memory: -1, MaxAbandoned: 10}
	long := budget.Budget{Time: 20 * time.Second, Memory: 2 << 20, MaxAbandoned: 10}
	for _, tc := range []struct {
		name  string
		spec  map[string]any
		b     budget.Budget
		limit string // "" for a render within budget
	}{
		{"small", map[string]any{"size": int64(3), "doublings": int64(3), "repeat": int64(10)}, short, ""},
		{"string doubling", map[string]any{"doublings": int64(22)}, long, "allocated"},
		{"list.Repeat", map[string]any{"repeat": int64(12000)}, short, "of CPU"},
		{"nested comprehension", map[string]any{"size": int64(28)}, short, "of CPU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			start := time.Now()
			res, err := render.Render(k, bomb(tc.spec), nil, render.Options{Budget: b})
			took := time.Since(start)
			if tc.limit == "" {
				if err != nil || len(res.Children) != 1 {
					t.Fatalf("Render = %v, want one child", err)
				}
				return
			}
			var rerr *render.Error
			if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget {
				t.Fatalf("Render = %v (after %s), want a %s error", err, took, wellknown.ReasonRenderBudget)
			}
			for _, want := range []string{tc.limit, "bomb: render evaluation budget exceeded", "template revision " + k.Revision,
				"bomb/bomb.cue:6:10 comprehension (3 nested for)", "bomb/bomb.cue:10:5 list.Repeat"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
			if took > b.Time+5*time.Second {
				t.Errorf("Render returned after %s, budget %s", took, b.Time)
			}
		})
	}
}

// FuzzRenderBudget: whatever the spec, a render returns within its time
// budget (and some slack) with children, a render.Error or a budget.Busy.
func FuzzRenderBudget(f *testing.F) {
	f.Add(uint8(2), uint8(2), uint32(2))
	f.Add(uint8(16), uint8(0), uint32(0))
	f.Add(uint8(0), uint8(22), uint32(0))
	f.Add(uint8(0), uint8(0), uint32(3000))
	k := bombKind(f)
	b := budget.Budget{Time: 100 * time.Millisecond, Memory: 4 << 20, MaxAbandoned: 2}
	f.Fuzz(func(t *testing.T, size, doublings uint8, repeat uint32) {
		spec := map[string]any{"size": int64(size % 17), "doublings": int64(doublings % 23), "repeat": int64(repeat % 3001)}
		start := time.Now()
		_, err := render.Render(k, bomb(spec), nil, render.Options{Budget: b})
		took := time.Since(start)
		var rerr *render.Error
		var busy *budget.Busy
		if err != nil && !errors.As(err, &rerr) && !errors.As(err, &busy) {
			t.Fatalf("spec %v: %v", spec, err)
		}
		// The slack of TestRenderBudget: under -race, beside other
		// packages' tests on 2 cores, a return was measured 1.4 s late.
		if took > b.Time+5*time.Second {
			t.Fatalf("spec %v: returned after %s, budget %s", spec, took, b.Time)
		}
	})
}

// TestRenderBudgetMessage: the message of a render out of memory.
func TestRenderBudgetMessage(t *testing.T) {
	k := bombKind(t)
	_, err := render.Render(k, bomb(map[string]any{"doublings": int64(22)}), nil,
		render.Options{Budget: budget.Budget{Time: time.Minute, Memory: 2 << 20, MaxAbandoned: 10}})
	msg := fmt.Sprint(err)
	if !strings.HasPrefix(msg, "bomb: render evaluation budget exceeded: allocated ") || !strings.Contains(msg, "(budget 1m0s of CPU, 2.0 MiB)") {
		t.Errorf("message: %s", msg)
	}
}
