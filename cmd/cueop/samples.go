package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// splitSamples parts the objects of a samples directory into the CRs of
// the templates' kinds and the objects they need (the ConfigMap a CR
// references), of a group no template serves. An object of a template's
// group but of no template's kind is an error: a misspelt CR.
func splitSamples(set *template.Set, objs []*unstructured.Unstructured) (crs, others []*unstructured.Unstructured, err error) {
	groups := map[string]bool{}
	for _, k := range set.Kinds {
		groups[k.Resource.Group] = true
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		switch {
		case set.Lookup(gvk.Group, gvk.Kind) != nil:
			crs = append(crs, o)
		case groups[gvk.Group]:
			return nil, nil, fmt.Errorf("sample %s/%s: no template serves %s", o.GetKind(), o.GetName(), gvk)
		default:
			others = append(others, o)
		}
	}
	return crs, others, nil
}
