package webhook

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Rename is a converter for tests and benchmarks: the spec field Hub of
// version HubVersion is the field Spoke of every other version. A spec
// with refuse: true does not convert.
type Rename struct {
	HubVersion, Hub, Spoke string
	// Annotate, when set, is written into every converted object's
	// annotation RenameAnnotation (which converter ran).
	Annotate string
}

// RenameAnnotation is the annotation Rename.Annotate is written into: a
// test converter's own, not one the engine writes (package wellknown).
const RenameAnnotation = "cueop.dev/test-converter"

// Convert implements Converter.
func (r Rename) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	spec, _ := out.Object["spec"].(map[string]any)
	if refuse, _ := spec["refuse"].(bool); refuse {
		return nil, errors.New("spec.refuse: this object refuses to convert")
	}
	from, to := r.Spoke, r.Hub
	if toVersion != r.HubVersion {
		from, to = r.Hub, r.Spoke
	}
	if v, ok := spec[from]; ok && spec != nil {
		delete(spec, from)
		spec[to] = v
	}
	if r.Annotate != "" {
		a := out.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[RenameAnnotation] = r.Annotate
		out.SetAnnotations(a)
	}
	gv := obj.GroupVersionKind().GroupVersion()
	out.SetAPIVersion(fmt.Sprintf("%s/%s", gv.Group, toVersion))
	return out, nil
}
