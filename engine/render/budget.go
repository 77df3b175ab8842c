package render

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Render evaluates k for parent and the observed children (keyed by child
// id; nil on a first render). A returned error is an *Error when the spec or
// the template is at fault, the render's budget included; a *budget.Busy
// when too many renders of k that ran out of budget are still running
// (retry later).
//
// The render runs within opts.Budget: when it runs out, Render returns at
// once and the evaluation, which CUE cannot stop, runs on abandoned
// (package budget).
func Render(k *template.Kind, parent *unstructured.Unstructured, observed map[string]*unstructured.Unstructured, opts Options) (*Result, error) {
	return RenderInputs(Inputs{Kind: k, Parent: parent, Observed: observed}, opts)
}

// RenderInputs is Render with every input of the render: the observed
// children and the referenced objects (references.go).
func RenderInputs(in Inputs, opts Options) (*Result, error) {
	k, parent := in.Kind, in.Parent
	var res *Result
	err := opts.Budget.Run(k.Name, func(t *budget.Tracker) error {
		opts.tracker = t
		var err error
		res, err = evaluate(k, parent, in, opts)
		if err != nil {
			err = observedHint(k, parent, in, err)
		}
		return err
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return nil, budgetError(k, ex)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// budgetError says which budget ran out, what was being evaluated and where
// in the template the evaluation can grow.
func budgetError(k *template.Kind, ex *budget.Exceeded) *Error {
	msg := fmt.Sprintf("%s: render %s (%s)", k.Name, ex.Error(), BudgetRevision(k))
	return &Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{msg + template.HotspotHint(k.Hotspots)}}
}

// BudgetRevision is how a budget Error names the template revision it ran
// out on, so that a reconciler can tell that the CR would only run out again.
func BudgetRevision(k *template.Kind) string { return "template revision " + k.Revision }
