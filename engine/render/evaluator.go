package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// Evaluator runs the CUE evaluations of a reconcile: the render of a CR
// and the evaluation of its references. The operator's runs them in
// worker processes it can kill (package worker); InProcess runs them in
// the calling process, for trusted input only: CUE cannot be stopped, and
// one evaluation can take the whole process down.
type Evaluator interface {
	Render(ctx context.Context, in Inputs, opts Options) (*Result, error)
	References(ctx context.Context, k *template.Kind, parent *unstructured.Unstructured, opts Options) ([]Reference, error)
}

// PackedEvaluator is an Evaluator whose renders come packed, as a worker
// process sends them: RenderPacked gives the Result and its Packed, which
// a memo keeps as it came instead of packing the Result again.
type PackedEvaluator interface {
	Evaluator
	RenderPacked(ctx context.Context, in Inputs, opts Options) (*Result, *Packed, error)
}

// RenderPacked renders in with ev and gives the result packed too: as ev
// sent it when ev is a PackedEvaluator, else packed here; nil when the
// result holds a value Pack cannot keep.
func RenderPacked(ctx context.Context, ev Evaluator, in Inputs, opts Options) (*Result, *Packed, error) {
	if pe, ok := ev.(PackedEvaluator); ok {
		return pe.RenderPacked(ctx, in, opts)
	}
	res, err := ev.Render(ctx, in, opts)
	if err != nil {
		return res, nil, err
	}
	p, ok := Pack(res)
	if !ok {
		return res, nil, nil
	}
	return res, p, nil
}

// InProcess evaluates in the calling process, within each evaluation's
// budget (RenderInputs, References).
type InProcess struct{}

// Render is RenderInputs.
func (InProcess) Render(_ context.Context, in Inputs, opts Options) (*Result, error) {
	return RenderInputs(in, opts)
}

// References is References.
func (InProcess) References(_ context.Context, k *template.Kind, parent *unstructured.Unstructured, opts Options) ([]Reference, error) {
	return References(k, parent, opts)
}

// ObservedView is what the template of k reads of the observed children:
// all that a render evaluates of them but for the engine's default
// readiness, which Reuse computes from the whole objects. An evaluator
// that copies the inputs elsewhere copies this view, then passes the
// result through Reuse with the whole inputs. The render digest covers the
// same view (Inputs.Digest).
func ObservedView(k *template.Kind, observed map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	if observed == nil {
		return nil
	}
	out := make(map[string]*unstructured.Unstructured, len(observed))
	for id, o := range observed {
		out[id] = &unstructured.Unstructured{Object: projectObserved(k, id, o.Object)}
	}
	return out
}
