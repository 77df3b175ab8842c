package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/tools/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template"
)

// vetConversions converts, for every kind with spokes, the parent of every
// golden case and specs generated from each version's schema
// (convert.GeneratedSpecs) to the other side of the hub and back
// (Converter.CheckSpecs, which the operator's reload runs too): a
// conversion that loses or invents a field is refused, named with its
// position.
func vetConversions(out io.Writer, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string) error {
	var errs []error
	for i, k := range set.Kinds {
		c, err := convert.New(k)
		if err != nil || c == nil {
			errs = append(errs, err)
			continue
		}
		specs := append(goldenSpecs(k, dir), convert.GeneratedSpecs(crds[i])...)
		if err := c.CheckSpecs(specs); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "ok   %s: %d specs convert to every other version and back\n", k.Name, len(specs))
	}
	return errors.Join(errs...)
}

// goldenSpecs are the specs of the parents of k's golden cases.
func goldenSpecs(k *template.Kind, dir string) []convert.Spec {
	paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
	var out []convert.Spec
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
		out = append(out, convert.Spec{Version: parent.GroupVersionKind().Version, Spec: spec})
	}
	return out
}
