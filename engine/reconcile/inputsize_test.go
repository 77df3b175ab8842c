package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// refusingEvaluator fails the test when a render reaches it.
type refusingEvaluator struct {
	render.InProcess
	t *testing.T
}

func (e refusingEvaluator) Render(context.Context, render.Inputs, render.Options) (*render.Result, error) {
	e.t.Error("a render over the input bound was evaluated")
	return nil, errors.New("evaluated")
}

// TestInputsBoundObservedAndReferencedTogether: a render whose observed
// child and referenced objects are each within the bound, but not
// together, is refused before it is evaluated, naming the CR and both
// inputs, largest first.
func TestInputsBoundObservedAndReferencedTogether(t *testing.T) {
	big := func(name string, n int) *unstructured.Unstructured {
		o := cm("ns", name, nil)
		o.Object["data"] = map[string]any{"d": strings.Repeat("x", n)}
		return o
	}
	in := render.Inputs{
		Observed:   map[string]*unstructured.Unstructured{"cache": big("cache", 600<<10)},
		Referenced: map[string]render.Referenced{"all": {List: true, Objects: []*unstructured.Unstructured{big("a", 300<<10), big("b", 400<<10)}}},
	}
	ev := boundedEvaluator{refusingEvaluator{t: t}, "App ns/a", 1 << 20}
	_, err := ev.Render(context.Background(), in, render.Options{})
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != wellknown.ReasonRenderBudget {
		t.Fatalf("render = %v, want a %s error", err, wellknown.ReasonRenderBudget)
	}
	for _, want := range []string{"App ns/a: its observed children and referenced objects hold", "more than the 1048576", "references.all (2 objects) 7", "observed.cache 6"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Index(err.Error(), "references.all") > strings.Index(err.Error(), "observed.cache") {
		t.Errorf("error %q does not name the largest input first", err)
	}
	in.Referenced = nil
	if err := inputsTooLarge("App ns/a", in, 1<<20); err != nil {
		t.Errorf("the observed child alone: %v", err)
	}
}
