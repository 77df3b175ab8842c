package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Render renders in in a worker, as render.RenderInputs does in process.
// An evaluation that overruns its budget or the worker's memory, or
// crashes its worker, is a render Error (wellknown.ReasonRenderBudget) that
// names what the evaluation used; its worker is replaced.
func (p *Pool) Render(ctx context.Context, in render.Inputs, opts render.Options) (*render.Result, error) {
	res, _, err := p.RenderPacked(ctx, in, opts)
	return res, err
}

// RenderPacked is Render, with the result packed as the worker sent it
// (nil when it could not pack it: then it sent the result as JSON).
func (p *Pool) RenderPacked(ctx context.Context, in render.Inputs, opts render.Options) (*render.Result, *render.Packed, error) {
	// The worker gets what the template reads of the observed children;
	// the engine's default readiness is computed here from the whole
	// objects (render.Reuse), as for a memoized render.
	req := &request{Op: opRender, Parent: render.WireParent(in.Parent), Observed: objects(render.ObservedView(in.Kind, in.Observed)), Options: wire(opts)}
	if err := p.setKind(req, in.Kind); err != nil {
		return nil, nil, err
	}
	if len(in.Referenced) > 0 {
		req.Referenced = make(map[string]wireReferenced, len(in.Referenced))
		for id, r := range in.Referenced {
			objs := make([]map[string]any, len(r.Objects))
			for i, o := range r.Objects {
				objs[i] = o.Object
			}
			req.Referenced[id] = wireReferenced{Objects: objs, List: r.List}
		}
	}
	resp, err := p.evaluate(ctx, in.Parent.GetNamespace(), in.Kind, req, opts.Budget)
	if err != nil {
		return nil, nil, err
	}
	if resp.Packed == nil {
		// Values render.Pack does not keep as they are (a json.Number of
		// CUE's) came as JSON, decoded to those it keeps: packed here.
		res := render.Reuse(in, result(resp.Result))
		packed, _ := render.Pack(res)
		return res, packed, nil
	}
	packed, err := unpack(resp.Packed)
	if err != nil {
		return nil, nil, err
	}
	return render.Reuse(in, packed.Unpack()), packed, nil
}

// unpack is the Packed a worker sent, checked whole.
func unpack(w *wirePacked) (*render.Packed, error) {
	children := make([]render.Child, len(w.Children))
	for i, c := range w.Children {
		children[i] = render.Child{ID: c.ID, Policy: c.Policy, Wave: c.Wave, ReadyWhen: c.ReadyWhen}
	}
	p, err := render.PackedOf(w.Data, children, render.Readiness{Ready: w.Ready, ByDefault: w.ReadyByDefault}, w.Conditions)
	if err != nil {
		return nil, fmt.Errorf("worker answer: %w", err)
	}
	return p, nil
}

// References evaluates k's references for parent in a worker, as
// render.References does in process.
func (p *Pool) References(ctx context.Context, k *template.Kind, parent *unstructured.Unstructured, opts render.Options) ([]render.Reference, error) {
	if !k.References {
		return nil, nil
	}
	req := &request{Op: opReferences, Parent: parent.Object, Options: wire(opts)}
	if err := p.setKind(req, k); err != nil {
		return nil, err
	}
	resp, err := p.evaluate(ctx, parent.GetNamespace(), k, req, opts.Budget)
	if err != nil {
		return nil, err
	}
	refs := make([]render.Reference, len(resp.References))
	for i, r := range resp.References {
		refs[i] = r.Ref
		refs[i].ID = r.ID
	}
	return refs, nil
}

func (p *Pool) setKind(req *request, k *template.Kind) error {
	req.Options.Limits = p.opts.Limits
	if k.Dir == "" {
		return fmt.Errorf("kind %s: not loaded from a templates directory: cannot render in a worker", k.Name)
	}
	req.Root, req.Kind, req.Revision = k.Root(), k.Name, k.Revision
	return nil
}

// evaluate runs req in a worker for tenant and turns a worker's end into
// a render budget Error of k. A worker that ends without a fatal error of
// its own (killed from outside) is not the evaluation's doing: the request
// is tried once more on a fresh worker, and only a second end is charged
// to it.
func (p *Pool) evaluate(ctx context.Context, tenant string, k *template.Kind, req *request, b budget.Budget) (*response, error) {
	for attempt := 0; ; attempt++ {
		resp, u, err := p.run(ctx, tenant, req, b)
		if err != nil {
			return nil, err
		}
		if resp != nil && resp.NeedFiles {
			if req.Files != nil || k.Files == nil {
				return nil, fmt.Errorf("kind %s: template revision %s: the worker found other templates on disk and no files of the revision to compile", k.Name, k.Revision)
			}
			req.Files = k.Files // the last good revision, no longer on disk
			attempt--
			continue
		}
		if resp != nil {
			if resp.Err != nil {
				return nil, resp.Err.err()
			}
			return resp, nil
		}
		if u.limit == "" && u.crashed == "exited" && attempt == 0 {
			continue
		}
		return nil, overBudget(k, req.Op, u, b, p.opts.Memory)
	}
}

// run runs req on a worker. resp is nil when the worker ended or was
// killed during the evaluation; u says what it used.
func (p *Pool) run(ctx context.Context, tenant string, req *request, b budget.Budget) (*response, usage, error) {
	msg, err := frame(req)
	if err != nil {
		return nil, usage{}, err
	}
	w, err := p.acquire(ctx, tenant)
	if err != nil {
		return nil, usage{}, err
	}
	resp, u, ok, err := w.send(ctx, msg, b, p.opts.Memory)
	if !ok {
		p.killed.Add(1)
	}
	p.release(w, ok)
	return resp, u, err
}

// overBudget is the render Error of an evaluation of k whose worker ended.
func overBudget(k *template.Kind, op string, u usage, b budget.Budget, memory int64) error {
	if op == opConvert || op == opCheck {
		return conversionOverBudget(k, u, b, memory) // convert.go
	}
	msg := fmt.Sprintf("%s: %s (%s)", k.Name, describe(op, u, b, memory), render.BudgetRevision(k))
	return &render.Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{msg + template.HotspotHint(k.Hotspots)}}
}

// describe says how an evaluation ended its worker and what it used.
func describe(op string, u usage, b budget.Budget, memory int64) string {
	b = b.WithDefaults()
	var what string
	switch u.limit {
	case "memory":
		what = fmt.Sprintf("exceeded the worker memory limit of %s and was killed", budget.MiB(memory))
	case "cpu":
		what = fmt.Sprintf("exceeded its budget (%s) and was killed", b)
	case "wall":
		what = fmt.Sprintf("exceeded %d times its CPU budget (%s) in wall-clock time and was killed", budget.WallFactor+1, b)
	default:
		what = fmt.Sprintf("crashed its worker (%s; worker memory limit %s, budget %s)", u.crashed, budget.MiB(memory), b)
	}
	return fmt.Sprintf("%s %s: the evaluation used %s", op, what, u)
}

func result(r *wireResult) *render.Result {
	if r == nil {
		return &render.Result{}
	}
	res := &render.Result{Status: r.Status, Ready: r.Ready, ReadyByDefault: r.ReadyByDefault, Immutable: r.Immutable, Conditions: r.Conditions,
		Children: make([]render.Child, len(r.Children))}
	if res.Status == nil {
		res.Status = map[string]any{}
	}
	for i, c := range r.Children {
		res.Children[i] = render.Child{ID: c.ID, Object: &unstructured.Unstructured{Object: c.Object}, Policy: c.Policy, Wave: c.Wave, ReadyWhen: c.ReadyWhen}
	}
	return res
}

// wire is opts as data; the scope of each allowed kind is asked now.
func wire(opts render.Options) wireOptions {
	o := wireOptions{MaxChildren: opts.MaxChildren, Budget: opts.Budget}
	if opts.AllowedKinds != nil {
		o.Allowed = opts.AllowedKinds.String()
	}
	if opts.ReadableKinds != nil {
		o.Readable = opts.ReadableKinds.String()
	}
	if opts.Scope != nil {
		allowed := opts.AllowedKinds
		if allowed == nil {
			allowed = render.MustKindSet(render.DefaultAllowedKinds)
		}
		o.Namespaced = map[string]bool{}
		for gk := range allowed {
			if namespaced, known := opts.Scope(gk); known {
				o.Namespaced[gk.String()] = namespaced
			}
		}
	}
	return o
}

func isExceeded(err error) bool {
	var ex *budget.Exceeded
	return errors.As(err, &ex) || strings.Contains(err.Error(), "evaluation budget exceeded")
}
