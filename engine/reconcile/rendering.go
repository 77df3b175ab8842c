// Stage 4, render: the current template over the CR, its observed children
// and its references, through the render.Evaluator, refused when its inputs
// are too large (inputsize), read again only when the digest of the inputs
// changed (the memo in the CR's record), with the child labels set
// (WithChildLabels); a render refused for a busy moment is kept quiet.
//
// It must not evaluate CUE itself (package render, behind render.Evaluator)
// nor write anything.

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// renderer is stage 4: it renders a CR with what observe saw and its
// references resolved to, through the CR's render memo, and
// makes sure the kinds of what it rendered are watched.
type renderer struct {
	eval    render.Evaluator
	opts    render.Options
	memo    *crs // the per-CR records: the memo and the busy series
	bound   int  // the bytes a render's inputs may hold
	labels  map[string]string
	cluster Cluster // nil: no kind is watched
	tally   tally
	// load reads the referenced objects whole (resolver.load).
	load func(context.Context) func(render.Inputs) (render.Inputs, error)
}

// render renders cr with k over v and referenced. A render error the
// template or the spec must fix stalls the CR, with no result; one that a
// retry may fix leaves it pending (and quiet while the render is busy for
// a moment).
func (x renderer) render(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured, v *view, referenced map[string]render.Referenced) (*render.Result, outcome, error) {
	start := time.Now()
	// Every input of the render: the observed children and the referenced
	// objects; the memo reuses the last result when their digest is the same.
	in := render.Inputs{Kind: k, Parent: cr, Observed: v.observed, Referenced: referenced}
	ev := boundedEvaluator{x.eval, objectText(cr), x.bound}
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
		o.quiet = isTransient(err) && x.memo.busyQuiet(key, time.Now())
		return nil, o, fmt.Errorf("%s: render: %w", objectText(cr), err)
	}
	x.memo.busyEnd(key)
	if res.ReadyByDefault && len(v.sources) > 0 {
		// The default readiness judges the children whole (observe.go).
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

// The render memo keeps, per CR (crRecord.memo), the digest of its last
// successful render's inputs and that render's result, packed
// (render.Packed; its size is in docs/benchmarks.md). A reconcile whose
// inputs have the same digest (same template revision, same parent fields, same observed paths
// the template reads) reuses the result and runs no CUE evaluation: a
// resync, a status write coming back, or a child event about a field the
// template does not read costs a digest instead of a render.
//
// Memory is bounded by the number of live CRs: an entry is replaced by
// each render of its CR, dropped when the CR is deleted (forget) or its
// render fails.

// memoEntry is a CR's last render.
type memoEntry struct {
	digest render.Digest
	packed *render.Packed
}

// render returns the result of rendering in for the CR key: the previous
// one when the digest of in is unchanged (hit), else a fresh render. load,
// when not nil, completes in before a render (the referenced objects read
// whole: references.go); its error is returned as is, with no render.
func (m *crs) render(ctx context.Context, ev render.Evaluator, key types.NamespacedName, in render.Inputs, opts render.Options, load func(render.Inputs) (render.Inputs, error)) (res *render.Result, hit bool, err error) {
	d, ok := in.Digest()
	if ok {
		var e *memoEntry
		m.read(key, func(c *crRecord) { e = c.memo })
		if e != nil && e.digest == d {
			m.mu.Lock()
			m.hits++
			m.mu.Unlock()
			return render.Reuse(in, e.packed.Unpack()), true, nil
		}
	}
	if load != nil {
		if in, err = load(in); err != nil {
			return nil, false, err
		}
		d, ok = in.Digest() // the objects read may be newer than their metadata
	}
	res, p, err := render.RenderPacked(ctx, ev, in, opts) // as a worker sent it
	m.mu.Lock()
	defer m.mu.Unlock()
	m.misses++
	if err != nil || !ok || p == nil {
		m.update(key, func(c *crRecord) { c.memo = nil })
		return res, false, err
	}
	m.update(key, func(c *crRecord) { c.memo = &memoEntry{digest: d, packed: p} })
	return res, false, nil
}

// size is the number of entries and about how many bytes they hold.
func (m *crs) size() (entries, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.m {
		if c.memo != nil {
			entries++
			bytes += c.memo.packed.Size() + len(c.memo.digest) + 64
		}
	}
	return entries, bytes
}

// MemoStats reports the render memo: reuses, renders, entries and about
// how many bytes they hold.
func (r *Reconciler) MemoStats() (hits, misses int64, entries, bytes int) {
	entries, bytes = r.crs.size()
	r.crs.mu.Lock()
	defer r.crs.mu.Unlock()
	return r.crs.hits, r.crs.misses, entries, bytes
}

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

// A render refused because the CR's tenant holds its share of the render
// workers (engine/worker's Busy) is a matter of a moment on a busy
// machine: the CR is retried with backoff, and its status is not written
// for it during busyGrace, so that a burst costs no status write (a write
// saying it waits, then one saying it converged). A CR refused for longer
// says that it waits (status.go), so that a starved CR never reads
// Converged for long.
const busyGrace = 10 * time.Second

// transient is an error that says a retry will do (engine/worker's Busy).
type transient interface{ Transient() bool }

// isTransient tells whether err is a transient refusal of a render.
func isTransient(err error) bool {
	var t transient
	return errors.As(err, &t) && t.Transient()
}

// busyQuiet records a busy refusal of key's render and tells whether it is
// still within busyGrace of the first of the series.
func (s *crs) busyQuiet(key types.NamespacedName, now time.Time) bool {
	first := now
	s.change(key, func(c *crRecord) {
		if c.busySince.IsZero() {
			c.busySince = now
		}
		first = c.busySince
	})
	return now.Sub(first) < busyGrace
}

// busyEnd ends key's series (rendered).
func (s *crs) busyEnd(key types.NamespacedName) {
	s.change(key, func(c *crRecord) { c.busySince = time.Time{} })
}

// quietly is what Reconcile returns for err: a transient refusal of the
// render (the CR's tenant holds its share of the render workers)
// is a state, not an error. The CR is retried with the controller's
// backoff as for an error, but nothing is logged as an error: a person has
// nothing to do about it, and a CR that waits for long says so in its
// status (status.go). Any other error is returned as it is.
func quietly(res ctrl.Result, err error) (ctrl.Result, error) {
	if err != nil && isTransient(err) {
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // Requeue is the rate-limited retry an error would get
	}
	return res, err
}

// WithChildLabels is res with childLabels set on every child, as a
// reconcile applies them (Reconciler.ChildLabels); cueop diff renders its
// children so. res is not modified: a render result may be shared, so each
// child's object, metadata and labels are copied.
func WithChildLabels(res *render.Result, childLabels map[string]string) *render.Result {
	if len(childLabels) == 0 || res == nil || len(res.Children) == 0 {
		return res
	}
	out := *res
	out.Children = make([]render.Child, len(res.Children))
	for i, c := range res.Children {
		obj := maps.Clone(c.Object.Object)
		md, _ := obj["metadata"].(map[string]any)
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		labels, _ := md["labels"].(map[string]any)
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]any{}
		}
		for k, v := range childLabels {
			labels[k] = v
		}
		md["labels"] = labels
		obj["metadata"] = md
		c.Object = &unstructured.Unstructured{Object: obj}
		out.Children[i] = c
	}
	return &out
}
