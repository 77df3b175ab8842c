package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/tools/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template"
)

// roundTrip is a spec at a version to convert there and back.
type roundTrip struct {
	version string
	spec    map[string]any
}

// vetConversions converts, for every kind with spokes, the parent of every
// golden case and specs generated from each version's schema
// (crdgen.Samples) to the other side of the hub and back
// (Converter.CheckRoundTrip): a conversion that loses or invents a field is
// refused, named with its position.
func vetConversions(out io.Writer, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string) error {
	var errs []error
	for i, k := range set.Kinds {
		c, err := convert.New(k)
		if err != nil || c == nil {
			errs = append(errs, err)
			continue
		}
		trips := append(goldenSpecs(k, dir), generatedSpecs(crds[i])...)
		var kerrs []string
		for _, rt := range trips {
			for _, via := range otherSide(k, rt.version) {
				err := c.CheckRoundTrip(rt.spec, rt.version, via)
				if err != nil && !errors.Is(err, convert.ErrInvalidInput) && !slices.Contains(kerrs, err.Error()) {
					kerrs = append(kerrs, err.Error())
				}
			}
		}
		for _, e := range kerrs {
			errs = append(errs, fmt.Errorf("kind %s: %s", k.Name, e))
		}
		if len(kerrs) == 0 {
			fmt.Fprintf(out, "ok   %s: %d specs convert to every other version and back\n", k.Name, len(trips))
		}
	}
	return errors.Join(errs...)
}

// otherSide are the versions a spec at version converts to: every spoke
// from the hub, the hub from a spoke.
func otherSide(k *template.Kind, version string) []string {
	var out []string
	for _, v := range k.Versions {
		if v.Name != version && (v.Hub || k.Version(version).Hub) {
			out = append(out, v.Name)
		}
	}
	return out
}

// goldenSpecs are the specs of the parents of k's golden cases.
func goldenSpecs(k *template.Kind, dir string) []roundTrip {
	paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
	var out []roundTrip
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		parent, err := golden.ParseParent(sectionData(txtar.Parse(data), golden.SectionParent), k)
		if err != nil {
			continue // vetCases reports it
		}
		spec, _ := parent.Object["spec"].(map[string]any)
		out = append(out, roundTrip{parent.GroupVersionKind().Version, spec})
	}
	return out
}

// generatedSpecs are crdgen.Samples of every version of crd.
func generatedSpecs(crd *apiextensionsv1.CustomResourceDefinition) []roundTrip {
	var out []roundTrip
	for _, v := range crd.Spec.Versions {
		for _, s := range crdgen.Samples(v.Schema.OpenAPIV3Schema.Properties["spec"]) {
			if m, ok := s.(map[string]any); ok {
				out = append(out, roundTrip{v.Name, m})
			}
		}
	}
	return out
}
