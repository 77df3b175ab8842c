package reconcile

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// WaveGate is what a reconcile holds back of a render with waves: the
// children of every wave above the first wave with a child that does not
// exist or is not ready.
type WaveGate struct {
	// Held are the ids of the children not applied yet (nor pruned, when
	// they exist); nil when nothing is held.
	Held map[string]bool
	// Wave is the wave the held children wait for (the first one not
	// ready), Blocker its first child that is not, and Why "to exist", "to
	// be ready" or "to be ready (readyWhen)".
	Wave    int
	Blocker *render.Child
	Why     string

	next int // the first wave held
}

// Message says which wave waits for which child, as the CR's Reconciling
// condition does; "" when nothing is held.
func (g WaveGate) Message() string {
	if g.Blocker == nil {
		return ""
	}
	o := g.Blocker.Object
	return fmt.Sprintf("wave %d waits for children.%s: %s %s/%s %s", g.next, g.Blocker.ID, o.GetKind(), o.GetNamespace(), o.GetName(), g.Why)
}

// gateWaves is what a reconcile of k holds back of res: the children of
// every wave above the first wave with a child that does not exist or is
// not ready for the gates (gateReady: its readyWhen, else kstatus), not
// applied yet (nor pruned, when they exist), and which child they wait for
// (nil and "" when nothing is held). A kind without waves holds nothing
// back.
func gateWaves(ctx context.Context, k *template.Kind, res *render.Result, v *view, modes BindingModes) (map[string]bool, string) {
	if !k.Waves {
		return nil, ""
	}
	g := GateWaves(ctx, res.Children, v.wholeLive, modes) // partialview.go
	return g.Held, g.Message()
}

// GateWaves is what a reconcile holds back of children, live being the
// live object of a child (nil when it does not exist), modes the binding
// modes of StorageClasses (nil: none known); see gateReady. Children all
// of wave 0 hold nothing back.
func GateWaves(ctx context.Context, children []render.Child, live func(render.Child) *unstructured.Unstructured, modes BindingModes) WaveGate {
	byWave := map[int][]render.Child{}
	var waves []int
	for _, c := range children {
		if _, ok := byWave[c.Wave]; !ok {
			waves = append(waves, c.Wave)
		}
		byWave[c.Wave] = append(byWave[c.Wave], c)
	}
	sort.Ints(waves)
	for i, w := range waves {
		blocker, why := blocker(ctx, byWave[w], live, modes)
		if blocker == nil || i == len(waves)-1 {
			continue
		}
		g := WaveGate{Held: map[string]bool{}, Wave: w, Blocker: blocker, Why: why, next: waves[i+1]}
		for _, later := range waves[i+1:] {
			for _, c := range byWave[later] {
				g.Held[c.ID] = true
			}
		}
		return g
	}
	return WaveGate{}
}

// blocker is the first child of a wave that does not let the gate pass
// (gateReady), and what it waits for.
func blocker(ctx context.Context, wave []render.Child, live func(render.Child) *unstructured.Unstructured, modes BindingModes) (*render.Child, string) {
	for i, c := range wave {
		if ok, why := gateReady(ctx, c, live(c), modes); !ok {
			return &wave[i], why
		}
	}
	return nil, ""
}
