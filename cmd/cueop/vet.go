package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/tools/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

func newVet(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "vet",
		Short: "Check every kind: contract, CRD, golden cases, children against the Kubernetes schemas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := g.load()
			if err != nil {
				return err
			}
			opts, err := g.renderOptions()
			if err != nil {
				return err
			}
			if err := vetReferences(set, opts.ReadableKinds); err != nil {
				return err
			}
			crds, err := generateCRDs(set)
			if err != nil {
				return err
			}
			if err := errors.Join(vetCases(set, crds, dir, opts, cmd.ErrOrStderr()), vetGolden(cmd.OutOrStdout(), set, dir, opts)); err != nil {
				return err
			}
			for _, k := range set.Kinds {
				fmt.Fprintf(cmd.OutOrStdout(), "ok   %s (%s, revision %s)\n", k.Name, k.Resource.GroupVersionKind(), k.Revision)
				if err := explainKind(cmd.OutOrStdout(), k); err != nil {
					return err
				}
				explainReads(cmd.OutOrStdout(), k)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "testdata", "./testdata", "directory of the golden cases")
	return cmd
}

// vetCases renders every golden case that should succeed and checks each
// child against the schema of its kind, then the first such case with the
// spec at the schema's bounds (vetBounds) and with the longest CR name
// (vetNameLength, a warning written to warn).
func vetCases(set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, opts render.Options, warn io.Writer) error {
	var errs []error
	for i, k := range set.Kinds {
		paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
		if len(paths) == 0 {
			errs = append(errs, fmt.Errorf("kind %s: no golden case in %s", k.Name, filepath.Join(dir, k.Name)))
		}
		var base *unstructured.Unstructured
		for _, p := range paths {
			parent, err := vetCase(k, p, opts)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			} else if base == nil {
				base = parent
			}
		}
		if base != nil {
			if err := vetBounds(k, crds[i], base, opts); err != nil {
				errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
			}
			if w := vetNameLength(k, base, opts); w != "" {
				fmt.Fprintln(warn, "warn", w)
			}
		}
	}
	return errors.Join(errs...)
}

// vetCase renders a golden case that should succeed and checks its
// children; it returns the case's parent, nil for a case that expects an
// error.
func vetCase(k *template.Kind, path string, opts render.Options) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ar := txtar.Parse(data)
	for _, f := range ar.Files {
		if f.Name == golden.SectionError {
			return nil, nil
		}
	}
	parent, err := golden.ParseParent(sectionData(ar, golden.SectionParent), k)
	if err != nil {
		return nil, err
	}
	referenced, err := golden.ParseObjects(sectionData(ar, golden.SectionReferenced))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", golden.SectionReferenced, err)
	}
	res, err := golden.RenderCase(k, parent, nil, referenced, opts)
	if err != nil {
		return nil, err
	}
	var errs []error
	if err := render.WaveGaps(res.Children); err != nil {
		errs = append(errs, err)
	}
	for _, c := range res.Children {
		if _, err := kschema.Typed(c.Object); err != nil && !errors.Is(err, kschema.ErrUnknownKind) {
			errs = append(errs, fmt.Errorf("children.%s: %w", c.ID, err))
		}
	}
	return parent, errors.Join(errs...)
}

// vetBounds renders parent with every numeric spec field crd's schema bounds
// set to its maximum. A spec the schema accepts must not render more
// children than the render budget: the operator would refuse that CR, and
// only after evaluating every child (slow and memory-hungry for large
// bounds). Specs the template refuses otherwise (cross-field constraints)
// prove nothing and pass.
func vetBounds(k *template.Kind, crd *apiextensionsv1.CustomResourceDefinition, parent *unstructured.Unstructured, opts render.Options) error {
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	max := parent.DeepCopy()
	spec, _ := max.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		max.Object["spec"] = spec
	}
	var set []string
	setMaximums(schema, spec, "spec", &set)
	if len(set) == 0 {
		return nil
	}
	_, err := render.Render(k, max, nil, opts)
	var rerr *render.Error
	if errors.As(err, &rerr) && rerr.Reason == render.ReasonChildRefused && strings.Contains(err.Error(), "render budget") {
		return fmt.Errorf("#Spec accepts %s, which renders more children than the budget (%w): lower those bounds",
			strings.Join(set, ", "), err)
	}
	if errors.As(err, &rerr) && rerr.Reason == render.ReasonRenderBudget {
		return fmt.Errorf("#Spec accepts %s, whose render runs out of the render budget (%w): lower those bounds",
			strings.Join(set, ", "), err)
	}
	return nil
}

// setMaximums sets in obj every integer or number field of s that has a
// maximum, and the same within nested objects present in obj or required;
// set collects "path=value".
func setMaximums(s apiextensionsv1.JSONSchemaProps, obj map[string]any, path string, set *[]string) {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := s.Properties[name]
		switch {
		case (p.Type == "integer" || p.Type == "number") && p.Maximum != nil:
			v := any(*p.Maximum)
			if p.Type == "integer" {
				v = int64(*p.Maximum)
			}
			obj[name] = v
			*set = append(*set, fmt.Sprintf("%s.%s=%v", path, name, v))
		case p.Type == "object" && len(p.Properties) > 0:
			sub, _ := obj[name].(map[string]any)
			if sub == nil {
				if !slices.Contains(s.Required, name) {
					continue
				}
				sub = map[string]any{}
				obj[name] = sub
			}
			setMaximums(p, sub, path+"."+name, set)
		}
	}
}

func sectionData(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}
