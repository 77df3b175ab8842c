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
