package reconcile

import (
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
}

// PreviewRender renders cr with k over objs, the objects listed as its
// children (those cr does not control are left out, as observe does), and
// says what a reconcile would apply and prune. manager is the field
// manager of cueop's applies. A render error is returned as Render returns
// it.
func PreviewRender(k *template.Kind, cr *unstructured.Unstructured, objs []*unstructured.Unstructured, manager string, opts render.Options) (*Preview, error) {
	owned := sortChildren(cr, objs)
	observed := owned.templateView(manager)
	res, err := render.Render(k, cr, observed, opts)
	if err != nil {
		return nil, err
	}
	if misread(res.Children, owned, observed) {
		observed = renderedView(res.Children, owned, observed)
		if res, err = render.Render(k, cr, observed, opts); err != nil {
			return nil, err
		}
	}
	p := &Preview{Result: res, Live: map[string]*unstructured.Unstructured{}, Prune: pruneVictims(res.Children, owned)}
	for _, c := range res.Children {
		if o := owned.matchLive(c.Object); o != nil {
			p.Live[c.ID] = o
		}
	}
	return p, nil
}
