package convert

import (
	"github.com/cueop/cueop/engine/wellknown"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// UnrenderedField is a field of a spoke's spec that the hub cannot hold
// as written: lost on the way to the hub, or Changed (the hub holds a
// value, normalised, that reads back otherwise).
type UnrenderedField struct {
	Path, Version string
	Changed       bool
}

// String is "spec.tier (v2)".
func (f UnrenderedField) String() string { return f.Path + " (" + f.Version + ")" }

// Unrendered are the fields of obj, an object at the hub, that a spoke's
// spec carried in its annotation (wellknown.AnnotationConversionPrefix) holds and the hub
// cannot: the fields the spoke's spec loses, or changes, on its way to the
// hub and back. The annotation keeps them, so they read back at that
// version, but the template renders the hub's spec: it never sees a lost
// field, and sees a changed one as the hub holds it.
// They come by version, then path.
func (c *Converter) Unrendered(obj *unstructured.Unstructured) ([]UnrenderedField, error) {
	hub := c.kind.Hub()
	var out []UnrenderedField
	for _, v := range c.kind.Versions {
		if v.Hub {
			continue
		}
		if _, ok := obj.GetAnnotations()[wellknown.AnnotationConversionPrefix+v.Name]; !ok {
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
				out = append(out, UnrenderedField{Path: d.path, Version: v.Name, Changed: d.what == "changes"})
			}
		}
	}
	return out, nil
}
