package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// renderer is stage 4: it renders a CR with what observe saw and its
// references resolved to, through the CR's render memo (memo.go), and
// makes sure the kinds of what it rendered are watched.
type renderer struct {
	eval    render.Evaluator
	opts    render.Options
	memo    *crs // the per-CR records: the memo and the busy series (busy.go)
	bound   int  // the bytes a render's inputs may hold (inputsize.go)
	labels  map[string]string
	cluster Cluster // nil: no kind is watched
	tally   tally
	// load reads the referenced objects whole (resolver.load).
	load func(context.Context) func(render.Inputs) (render.Inputs, error)
}

// render renders cr with k over v and referenced. A render error the
// template or the spec must fix stalls the CR, with no result; one that a
// retry may fix leaves it pending (and quiet while the render is busy for
// a moment: busy.go).
func (x renderer) render(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured, v *view, referenced map[string]render.Referenced) (*render.Result, outcome, error) {
	start := time.Now()
	// Every input of the render: the observed children and the referenced
	// objects; the memo reuses the last result when their digest is the same.
	in := render.Inputs{Kind: k, Parent: cr, Observed: v.observed, Referenced: referenced}
	ev := boundedEvaluator{x.eval, objectText(cr), x.bound} // inputsize.go
	key := client.ObjectKeyFromObject(cr)
	res, hit, err := x.memo.render(ctx, ev, key, in, x.opts, x.load(ctx))
	if !hit {
		x.tally.rendered(time.Since(start), err)
	}
	var rerr *render.Error
	if errors.As(err, &rerr) {
		return nil, stallOf(rerr.Reason, rerr.Error()), nil
	}
	if err != nil {
		o := outcome{pending: "render not run, retrying: " + firstLine(err.Error())}
		o.quiet = isTransient(err) && x.memo.busyQuiet(key, time.Now()) // busy.go
		return nil, o, fmt.Errorf("%s: render: %w", objectText(cr), err)
	}
	x.memo.busyEnd(key)
	if res.ReadyByDefault && len(v.sources) > 0 {
		// The default readiness judges the children whole (partialview.go).
		res = render.Reuse(render.Inputs{Kind: k, Observed: v.wholeObserved()}, res)
	}
	return WithChildLabels(res, x.labels), outcome{}, nil // not ready: the CR waits (run.wait)
}

// watchKinds makes sure the kinds of every rendered child are watched, at
// the version rendered. A kind not watched before has no children to
// observe: it had none managed by cueop when the operator started, and only
// this process creates them.
func (x renderer) watchKinds(ctx context.Context, cr *unstructured.Unstructured, res *render.Result) (outcome, error) {
	if x.cluster == nil {
		return outcome{}, nil
	}
	var done []schema.GroupVersionKind
	for _, c := range res.Children {
		gvk := c.Object.GroupVersionKind()
		if slices.Contains(done, gvk) {
			continue
		}
		done = append(done, gvk)
		if err := deny("watch "+gvk.Kind+" children", x.cluster.WatchKind(ctx, gvk)); err != nil { // forbidden.go
			return waitFor("watch failed, retrying: " + err.Error()), fmt.Errorf("%s: %w", objectText(cr), err)
		}
	}
	return outcome{}, nil
}
