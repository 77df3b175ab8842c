package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// Preview is what a reconcile of one CR would render and which live
// objects it would apply over and prune, computed as Reconcile does but
// from objects the caller listed, with no request (cueop diff).
type Preview struct {
	// Result is the render, over the children observed as a reconcile
	// sees them.
	Result *render.Result
	// Live is, by child id, the live object each rendered child is (same
	// group, kind and name); a child without one would be created.
	Live map[string]*unstructured.Unstructured
	// Prune are the objects the CR controls that the render no longer has:
	// a reconcile deletes them, or releases those marked prune: never.
	Prune []*unstructured.Unstructured
	// Gate is what the reconcile holds back of a render with waves, given
	// the live children: the children of the waves above the first one not
	// ready are not applied by this reconcile.
	Gate WaveGate
}

// PreviewRender renders cr with k over objs, the objects listed as its
// children (those cr does not control are left out, as observe does), and
// the objects its references resolved to (ReadReferences), and says what a
// reconcile would apply and prune. manager is the field manager of cueop's
// applies; childLabels are the labels the operator sets on every child of
// k besides the engine's own (Reconciler.ChildLabels: the identity's, the
// shard's), set on the rendered children as a reconcile sets them. A
// render error is returned as RenderInputs returns it.
func PreviewRender(k *template.Kind, cr *unstructured.Unstructured, objs []*unstructured.Unstructured, referenced map[string]render.Referenced, manager string, childLabels map[string]string, opts render.Options) (*Preview, error) {
	owned := sortChildren(cr, objs)
	in := render.Inputs{Kind: k, Parent: cr, Observed: owned.templateView(manager), Referenced: referenced}
	res, err := render.RenderInputs(in, opts)
	if err != nil {
		return nil, err
	}
	if misread(res.Children, owned, in.Observed) {
		in.Observed = renderedView(res.Children, owned, in.Observed)
		if res, err = render.RenderInputs(in, opts); err != nil {
			return nil, err
		}
	}
	res = WithChildLabels(res, childLabels)
	p := &Preview{Result: res, Live: map[string]*unstructured.Unstructured{}, Prune: pruneVictims(res.Children, owned)}
	for _, c := range res.Children {
		if o := owned.matchLive(c.Object); o != nil {
			p.Live[c.ID] = o
		}
	}
	if k.Waves {
		p.Gate = GateWaves(context.Background(), res.Children, func(c render.Child) *unstructured.Unstructured { return p.Live[c.ID] }, nil)
	}
	return p, nil
}
