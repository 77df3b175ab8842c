package main

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// retainingKinds are the CR resources whose golden cases or samples render
// a child with onDelete: retain: the operator patches their finalizers
// (cueop.dev/retain), and needs patch on them; the others need not.
func retainingKinds(set *template.Set, testdata, samples string, opts render.Options) ([]schema.GroupResource, error) {
	cases, err := renderedParents(set, testdata, samples)
	if err != nil {
		return nil, err
	}
	var out []schema.GroupResource
	for _, c := range cases {
		gr := schema.GroupResource{Group: c.kind.Resource.Group, Resource: c.kind.Resource.Plural}
		if !slices.Contains(out, gr) && (c.kind.Waves || retains(c, opts)) {
			out = append(out, gr)
		}
	}
	return out, nil
}

// retains reports whether c renders a child to retain, first render or
// with its observed children. A case that fails to render retains nothing
// (childKinds reports the failure).
func retains(c parentCase, opts render.Options) bool {
	res, err := golden.RenderCase(c.kind, c.parent, c.observed, c.referenced, opts)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(res.Children, func(ch render.Child) bool { return ch.Policy.OnDelete == render.OnDeleteRetain })
}
