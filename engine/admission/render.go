package admission

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// admitter gathers the verdict of one Admit.
type admitter struct {
	in   Input
	v    Verdict
	seen map[string]bool // warnings given
	// over: a render ran out of its budget; the next would likely too,
	// and leave one more evaluation running on abandoned.
	over bool
}

func newAdmitter(in Input) *admitter {
	if in.Eval == nil {
		in.Eval = render.InProcess{}
	}
	return &admitter{in: in, seen: map[string]bool{}}
}

func (a *admitter) refuse(f Finding) { a.v.Refused = append(a.v.Refused, f) }

// warn adds a warning, once per message.
func (a *admitter) warn(check, source, msg string) {
	if a.seen[msg] {
		return
	}
	a.seen[msg] = true
	a.v.Warnings = append(a.v.Warnings, Finding{Check: check, Source: source, Pos: firstPos(msg), Message: msg})
}

// render renders parent, with the objects it may reference, as a first
// render (no child observed yet), and checks what comes out. built: the
// CR was built from the schema, so what its spec or its namespace makes
// fail proves nothing.
func (a *admitter) render(ctx context.Context, source string, parent *unstructured.Unstructured, referenced []*unstructured.Unstructured, built bool) {
	if a.over || ctx.Err() != nil {
		return
	}
	in, res, guessed, err := a.evaluate(ctx, parent, referenced, built)
	if err != nil {
		a.over = overBudget(err)
		if !built || a.over || !guessed && !provesNothing(err) {
			a.refuse(Finding{Check: CheckRender, Source: source, Pos: firstPos(err.Error()), Message: err.Error()})
		}
		return
	}
	if err := render.WaveGaps(res.Children); err != nil {
		a.refuse(Finding{Check: CheckWaves, Source: source, Message: err.Error()})
	}
	for _, c := range res.Children {
		if err := checkChild(c); err != nil {
			a.refuse(Finding{Check: CheckChildren, Source: source, Pos: childPos(a.in.Kind, c.ID, err), Message: err.Error()})
		}
	}
	// GateWarnings evaluates in this process, within the budget, a render
	// the Evaluator has just shown to fit in it.
	for _, w := range render.GateWarnings(in, a.in.Options) {
		a.warn(CheckGates, source, w)
	}
	for _, w := range render.ReadWarningsOf(a.in.Kind, res.Children) {
		a.warn(CheckReads, source, w)
	}
}

// evaluate renders parent at the kind's hub version, its references
// resolved against referenced, as golden.RenderCase does, but with the
// Evaluator. For a CR built from the schema (built), a reference by name
// that finds nothing is guessed: an object of its kind and name with
// nothing else, which the template may not take (then the render proves
// nothing).
func (a *admitter) evaluate(ctx context.Context, parent *unstructured.Unstructured, referenced []*unstructured.Unstructured, built bool) (in render.Inputs, res *render.Result, guessed bool, err error) {
	k, opts := a.in.Kind, a.in.Options
	hub, err := golden.ToHub(k, parent)
	if err != nil {
		var rerr *render.Error
		if !errors.As(err, &rerr) {
			err = &render.Error{Reason: wellknown.ReasonInvalidSpec, Messages: []string{err.Error()}}
		}
		return in, nil, false, err
	}
	in = render.Inputs{Kind: k, Parent: hub}
	refs, err := a.in.Eval.References(ctx, k, hub, opts)
	if err != nil {
		return in, nil, false, err
	}
	if len(refs) > 0 {
		got, missing := render.Resolve(refs, hub.GetNamespace(), referenced)
		if len(missing) > 0 && built {
			got, missing = render.Resolve(refs, hub.GetNamespace(), append(guess(missing, hub.GetNamespace()), referenced...))
			guessed = true
		}
		if len(missing) > 0 {
			return in, nil, guessed, golden.MissingReferences(hub.GetNamespace(), missing)
		}
		in.Referenced = got
	}
	res, err = a.in.Eval.Render(ctx, in, opts)
	return in, res, guessed, err
}

// guess is, for each reference by name, an object of its kind and name in
// namespace, with nothing else.
func guess(missing []render.Reference, namespace string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(missing))
	for _, m := range missing {
		o := &unstructured.Unstructured{Object: map[string]any{}}
		o.SetGroupVersionKind(m.GroupVersionKind())
		o.SetName(m.Name)
		o.SetNamespace(namespace)
		out = append(out, o)
	}
	return out
}

// provesNothing tells the errors of a CR built from the schema that are
// not the template's: the template refuses the spec (a cross-field
// constraint, a pattern the generator does not meet), or a reference by
// name finds nothing (only a real CR's namespace holds it).
func provesNothing(err error) bool {
	var rerr *render.Error
	return errors.As(err, &rerr) && (rerr.Reason == wellknown.ReasonInvalidSpec || rerr.Reason == wellknown.ReasonReferenceNotFound)
}

// overBudget tells a render that ran out of its budget, or that waits for
// earlier ones that did.
func overBudget(err error) bool {
	var rerr *render.Error
	var busy *budget.Busy
	return errors.As(err, &rerr) && rerr.Reason == wellknown.ReasonRenderBudget || errors.As(err, &busy)
}

// checkChild checks c against the Kubernetes schema of its kind; a kind
// with no built-in schema passes.
func checkChild(c render.Child) error {
	if _, err := kschema.Typed(c.Object); err != nil && !errors.Is(err, kschema.ErrUnknownKind) {
		return fmt.Errorf("children.%s: %w", c.ID, err)
	}
	return nil
}
