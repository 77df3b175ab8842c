package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// MaxInputBytes bounds what one render reads besides its CR: what the
// template reads of the observed children and the referenced objects, by
// render.ValueBytes. It is below the 64 MiB of one message to a render
// worker (worker.MaxMessage), with room for the quotes and commas of its
// JSON; the render memory budget bounds them instead when it is smaller.
const MaxInputBytes = 48 << 20

// inputBound is the bytes a render's inputs may hold.
func (r *Reconciler) inputBound() int {
	bound := int64(MaxInputBytes)
	if m := r.Options.Budget.WithDefaults().Memory; m > 0 && m < bound {
		bound = m
	}
	return int(bound)
}

// boundedEvaluator refuses a render whose inputs hold more than max bytes
// (inputsTooLarge) and hands the others to its Evaluator.
type boundedEvaluator struct {
	render.Evaluator
	subject string
	max     int
}

func (b boundedEvaluator) Render(ctx context.Context, in render.Inputs, opts render.Options) (*render.Result, error) {
	if err := inputsTooLarge(b.subject, in, b.max); err != nil {
		return nil, err
	}
	return b.Evaluator.Render(ctx, in, opts)
}

// RenderPacked is Render, keeping its Evaluator's packed result.
func (b boundedEvaluator) RenderPacked(ctx context.Context, in render.Inputs, opts render.Options) (*render.Result, *render.Packed, error) {
	if err := inputsTooLarge(b.subject, in, b.max); err != nil {
		return nil, nil, err
	}
	return render.RenderPacked(ctx, b.Evaluator, in, opts)
}

// inputsTooLarge is the refusal, a render Error (wellknown.ReasonRenderBudget:
// the CR stalls until its inputs change), of a render of subject whose
// observed children and referenced objects hold more than max bytes,
// naming the largest; nil when they hold no more.
func inputsTooLarge(subject string, in render.Inputs, max int) error {
	type input struct {
		name string
		size int
	}
	var inputs []input
	total := 0
	observed := in.Observed
	if in.Kind != nil {
		observed = render.ObservedView(in.Kind, observed) // what a worker is sent
	}
	for id, o := range observed {
		n := render.ValueBytes(o.Object)
		inputs, total = append(inputs, input{"observed." + id, n}), total+n
	}
	for id, ref := range in.Referenced {
		n := 0
		for _, o := range ref.Objects {
			n += render.ValueBytes(o.Object)
		}
		inputs, total = append(inputs, input{fmt.Sprintf("references.%s (%d objects)", id, len(ref.Objects)), n}), total+n
	}
	if total <= max {
		return nil
	}
	slices.SortFunc(inputs, func(a, b input) int { return cmp.Or(cmp.Compare(b.size, a.size), strings.Compare(a.name, b.name)) })
	var largest []string
	for _, in := range inputs[:min(len(inputs), 3)] {
		largest = append(largest, fmt.Sprintf("%s %d bytes", in.name, in.size))
	}
	return &render.Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{fmt.Sprintf(
		"%s: its observed children and referenced objects hold %d bytes, more than the %d a render may read: not rendered (the largest: %s; reference fewer or smaller objects)",
		subject, total, max, strings.Join(largest, ", "))}}
}
