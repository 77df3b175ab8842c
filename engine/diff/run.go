package diff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// DefaultWorkers is how many CRs are diffed at once.
const DefaultWorkers = 8

// Options say what to diff and with which client.
type Options struct {
	// Client reads the cluster and sends the dry runs; its RESTMapper tells
	// which kinds the cluster serves. It must not write: Run only reads and
	// dry-runs.
	Client client.Client
	// Set are the templates to preview.
	Set *template.Set
	// Render is the administrator's render policy (allowed kinds, budget);
	// a nil Scope is asked of the Client's RESTMapper.
	Render render.Options
	// FieldManager is cueop's; empty means apply.DefaultFieldManager.
	FieldManager string
	// Namespace limits the CRs to one namespace; "" means all.
	Namespace string
	// Selector limits the CRs by label; nil means all.
	Selector labels.Selector
	// Kinds limits the kinds (Kind, Kind.group or plural, any case); empty
	// means every kind of Set.
	Kinds []string
	// Files, when not empty, are the CRs to diff instead of the cluster's:
	// each is what applying it would do (it is dry-run applied first).
	Files []*unstructured.Unstructured
	// Apply is how the user applies Files: ApplyAuto (client-side for a live
	// CR with a last-applied configuration, else server-side),
	// ApplyClientSide or ApplyServerSide.
	Apply ApplyMode
	// Workers bounds the CRs diffed at once; 0 means DefaultWorkers.
	Workers int
	// ChildLabels, when set, are the labels the operator sets on every
	// child of a kind besides cueop's own (operator.ChildLabels: the
	// identity the kind acts as): the children are rendered with them, as
	// the reconciles apply them. Nil: none (the operator's shared identity).
	ChildLabels func(*template.Kind) map[string]string
}

// differ is one Run.
type differ struct {
	o       Options
	applier *apply.Applier
	manager string
	reads   *readLists // the objects templates reference
}

// job is one CR to diff, with the objects listed as its children.
type job struct {
	kind *template.Kind
	cr   *unstructured.Unstructured
	objs []*unstructured.Unstructured
	err  error // why the CR cannot be diffed (set while listing)
	// crDiff is what applying the file changes in the CR (Options.Files).
	crDiff string
}

// Run diffs every CR Options selects. Failures of one CR are in its entry
// of the Report; err is only for a Run that could not start.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Client == nil || o.Set == nil {
		return nil, errors.New("diff: no client or no templates")
	}
	if o.FieldManager == "" {
		o.FieldManager = apply.DefaultFieldManager
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Render.Scope == nil {
		o.Render.Scope = scopeOf(o.Client)
	}
	d := &differ{o: o, applier: &apply.Applier{Client: o.Client, FieldManager: o.FieldManager}, manager: o.FieldManager,
		reads: &readLists{c: o.Client, namespace: o.Namespace}}
	r := &Report{}
	for name, err := range o.Set.Broken {
		r.Errors = append(r.Errors, fmt.Sprintf("template %s: %v", name, err))
	}
	sort.Strings(r.Errors)
	jobs, total := d.jobs(ctx, r)
	results := d.runAll(ctx, jobs)
	for _, c := range results {
		if c.Failed() || c.Changing() {
			r.CRs = append(r.CRs, c)
		}
	}
	r.summarize(total)
	return r, nil
}

// runAll diffs the jobs, at most Workers at once, in order.
func (d *differ) runAll(ctx context.Context, jobs []job) []CR {
	out := make([]CR, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(d.o.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = d.cr(ctx, jobs[i])
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// cr diffs one CR: render over its children as a reconcile would, then a
// dry run per child that NeedsApply says would change.
func (d *differ) cr(ctx context.Context, j job) CR {
	gvk := j.kind.Resource.GroupVersionKind()
	out := CR{Group: gvk.Group, Kind: gvk.Kind, Namespace: j.cr.GetNamespace(), Name: j.cr.GetName(), Diff: j.crDiff}
	if j.err != nil {
		out.Error = j.err.Error()
		return out
	}
	referenced, missing, err := d.references(ctx, j)
	if err == nil && missing != "" {
		// As the controller: the CR waits for the object, and nothing of it
		// is rendered, applied or pruned meanwhile.
		out.Reason = wellknown.ReasonReferenceNotFound
		out.Error = wellknown.ReasonReferenceNotFound + ": " + missing + ": the controller renders, applies and prunes nothing for this CR until it exists"
		return out
	}
	var p *reconcile.Preview
	if err == nil {
		p, err = reconcile.PreviewRender(j.kind, j.cr, j.objs, referenced, d.manager, d.childLabels(j.kind), d.o.Render)
	}
	if err == nil {
		p, err = d.atRenderedVersions(ctx, j, referenced, p)
	}
	if err != nil {
		out.Reason, out.Error = renderError(err)
		return out
	}
	d.children(ctx, j, p, &out)
	return out
}

// children diffs the children of p, the CR's render, into out: each
// rendered child (its dry run) and each pruned one, then holds the others
// where a refused or conflicting child holds the controller.
func (d *differ) children(ctx context.Context, j job, p *reconcile.Preview, out *CR) {
	var refused, conflicts []string
	for _, c := range p.Result.Children {
		ch := d.child(ctx, j.cr, c, p.Live[c.ID])
		if ch.Action == Unchanged {
			out.Unchanged++
			continue
		}
		if j.kind.Waves {
			ch.Wave = &c.Wave
		}
		held := p.Gate.Held[c.ID]
		if held {
			ch.Waiting = waiting(p.Gate)
		}
		if ch.Action == Refused && !held {
			refused = append(refused, "children."+ch.ID)
		}
		if ch.Action == Conflict && !held {
			conflicts = append(conflicts, "children."+ch.ID)
		}
		out.Children = append(out.Children, ch)
	}
	for _, o := range p.Prune {
		ch := d.prune(o)
		if j.kind.Waves {
			w := render.WaveOf(o)
			ch.Wave = &w
		}
		out.Children = append(out.Children, ch)
	}
	if len(conflicts) > 0 {
		holdForConflict(out.Children, conflicts)
	} else if len(refused) > 0 {
		hold(out.Children, refused)
	}
}

// childLabels are the labels the operator sets on the children of k
// besides cueop's own (Options.ChildLabels).
func (d *differ) childLabels(k *template.Kind) map[string]string {
	if d.o.ChildLabels == nil {
		return nil
	}
	return d.o.ChildLabels(k)
}

// waiting says which lower wave a held child waits for: the controller
// applies it in a later reconcile, once that wave's children exist and are
// ready.
func waiting(g reconcile.WaveGate) string {
	o := g.Blocker.Object
	return fmt.Sprintf("waiting for wave %d: children.%s (%s %s/%s) %s", g.Wave, g.Blocker.ID, o.GetKind(), o.GetNamespace(), o.GetName(), g.Why)
}

// hold marks the recreates and prunes that a reconcile does not do while a
// child is refused: the CR stalls, and nothing is deleted.
func hold(children []Child, refused []string) {
	for i, c := range children {
		if c.Action == Recreate || c.Action == Prune || c.Action == Release {
			children[i].Reason = strings.TrimPrefix(c.Reason+"; ", "; ") +
				"held: not done while " + strings.Join(refused, ", ") + " is refused"
		}
	}
}

// holdForConflict marks what a reconcile does not do while a child is in
// conflict: it changes nothing that exists (it still creates the children
// whose names are free).
func holdForConflict(children []Child, conflicts []string) {
	for i, c := range children {
		if c.Action != Create && c.Action != Conflict {
			children[i].Reason = strings.TrimPrefix(c.Reason+"; ", "; ") +
				"held: not done while " + strings.Join(conflicts, ", ") + " is in conflict"
		}
	}
}

// renderError is a render failure, each line naming its source (the CR
// field path or child id, and the CUE file:line:column), and its reason
// when the render gives one (the reason of the controller's condition).
func renderError(err error) (reason, msg string) {
	var rerr *render.Error
	if errors.As(err, &rerr) {
		return rerr.Reason, rerr.Reason + ": " + strings.Join(rerr.Messages, "\n")
	}
	return "", err.Error()
}

// scopeOf asks c's RESTMapper whether a kind is namespaced.
func scopeOf(c client.Client) render.ScopeFunc {
	return func(gk schema.GroupKind) (namespaced, known bool) {
		m, err := c.RESTMapper().RESTMapping(gk)
		if err != nil {
			return false, false
		}
		return m.Scope.Name() == "namespace", true
	}
}

// selected reports whether kind k is among the names asked for.
func selected(k *template.Kind, names []string) bool {
	if len(names) == 0 {
		return true
	}
	r := k.Resource
	gk := schema.GroupKind{Group: r.Group, Kind: r.Kind}
	return slices.ContainsFunc(names, func(n string) bool {
		return strings.EqualFold(n, r.Kind) || strings.EqualFold(n, gk.String()) ||
			strings.EqualFold(n, r.Plural) || strings.EqualFold(n, r.CRDName())
	})
}
