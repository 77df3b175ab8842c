package convert

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Unrendered are the fields of obj, an object at the hub, that a spoke's
// spec carried in its annotation (AnnotationPrefix) holds and the hub
// cannot: the fields the spoke's spec loses, or changes, on its way to the
// hub and back. The annotation keeps them, so they read back at that
// version, but the template renders the hub's spec and never sees them.
// Each is named as "spec.tier (v2)", by version, then path.
func (c *Converter) Unrendered(obj *unstructured.Unstructured) ([]string, error) {
	hub := c.kind.Hub()
	var out []string
	for _, v := range c.kind.Versions {
		if v.Hub {
			continue
		}
		if _, ok := obj.GetAnnotations()[AnnotationPrefix+v.Name]; !ok {
			continue
		}
		at, err := c.Convert(obj, v.Name) // the spec as read at v
		if err != nil {
			return nil, err
		}
		at.SetAnnotations(nil)
		there, err := c.Convert(at, hub.Name)
		if err != nil {
			return nil, err
		}
		there.SetAnnotations(nil)
		back, err := c.Convert(there, v.Name)
		if err != nil {
			return nil, err
		}
		want, _, _ := unstructured.NestedMap(at.Object, "spec")
		got, _, _ := unstructured.NestedMap(back.Object, "spec")
		for _, d := range diff("spec", want, got) {
			if d.what != "invents" {
				out = append(out, d.path+" ("+v.Name+")")
			}
		}
	}
	return out, nil
}
