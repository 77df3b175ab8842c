package golden

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/tools/txtar"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// SectionConverted is the expected form of a case's parent at another
// served version, the version its apiVersion names: the case converts the
// parent to it (engine/convert).
const SectionConverted = "converted.yaml"

// ToHub returns parent converted to k's hub version, what the operator
// renders: parent itself when it is at the hub already.
func ToHub(k *template.Kind, parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	hub := k.Hub()
	if hub == nil || parent.GroupVersionKind().Version == hub.Name {
		return parent, nil
	}
	c, err := convert.New(k)
	if err != nil {
		return nil, err
	}
	if c == nil { // one version, and parent is not at it: a version dropped
		return nil, fmt.Errorf("apiVersion %s: version %q is not served (served: %s)", parent.GetAPIVersion(), parent.GroupVersionKind().Version, hub.Name)
	}
	out, err := c.Convert(parent, hub.Name)
	var se *convert.SpecError
	if errors.As(err, &se) {
		// A spec error, as the render of a parent at the hub words it.
		if v := k.Version(se.Version); v != nil {
			spec, _, _ := unstructured.NestedMap(parent.Object, "spec")
			if rerr := render.SpecErrorOf(v.Spec, spec); rerr != nil {
				return nil, rerr
			}
		}
		return nil, se
	}
	return out, err
}

// evaluateConverted converts parent to the version of the case's
// converted.yaml and returns the section it produces: the converted
// object, or error.txt when the conversion fails. ok is false for a case
// without converted.yaml.
func evaluateConverted(set *template.Set, k *template.Kind, ar *txtar.Archive, parent *unstructured.Unstructured) (map[string][]byte, bool, error) {
	data := Section(ar, SectionConverted)
	if data == nil {
		return nil, false, nil
	}
	var want struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal(data, &want); err != nil || want.APIVersion == "" {
		return nil, true, fmt.Errorf("%s: want an object with its apiVersion (%v)", SectionConverted, err)
	}
	_, version, _ := strings.Cut(want.APIVersion, "/")
	c, err := convert.New(k)
	if err != nil {
		return nil, true, err
	}
	if c == nil {
		return nil, true, fmt.Errorf("%s: kind %s serves one version only", SectionConverted, k.Name)
	}
	got, err := c.Convert(parent, version)
	if err != nil {
		return map[string][]byte{SectionError: []byte(Relative(set.Root, err.Error()) + "\n")}, true, nil
	}
	y, err := yaml.Marshal(got.Object)
	if err != nil {
		return nil, true, err
	}
	return map[string][]byte{SectionConverted: y}, true, nil
}

// Section is the data of the section name of ar, nil when it has none.
func Section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}
