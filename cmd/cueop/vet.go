package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/tools/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

func newVet(g *globals) *cobra.Command {
	var dir, crdsDir, samples string
	var allow []string
	var idf identityFlags
	cmd := &cobra.Command{
		Use:   "vet",
		Short: "Check every kind: contract, CRD, golden cases, children against the Kubernetes schemas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, opts, err := g.loadForRender()
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
			if err := checkCommittedCRDs(cmd.ErrOrStderr(), set, crds, crdsDir, allow, true); err != nil { // schemaguard.go
				return err
			}
			if err := errors.Join(vetCases(g, set, crds, dir, opts, cmd.ErrOrStderr()), vetGolden(cmd.OutOrStdout(), set, dir, opts),
				vetConversions(cmd.OutOrStdout(), set, crds, dir)); err != nil {
				return err
			}
			ids, err := vetIdentities(set, dir, samples, opts, idf, cmd.ErrOrStderr()) // vetidentity.go
			if err != nil {
				return err
			}
			for _, k := range set.Kinds {
				fmt.Fprintf(cmd.OutOrStdout(), "ok   %s (%s, revision %s)\n", k.Name, k.Resource.GroupVersionKind(), k.Revision)
				if err := explainKind(cmd.OutOrStdout(), k); err != nil {
					return err
				}
				explainReads(cmd.OutOrStdout(), k)
				fmt.Fprint(cmd.OutOrStdout(), ids[k.Name])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "testdata", "./testdata", "directory of the golden cases")
	cmd.Flags().StringVar(&crdsDir, "crds", "./crds", "directory of the committed CRDs, which a schema change must not break")
	cmd.Flags().StringVar(&samples, "samples", "./config/samples", "directory of the sample CRs, rendered with the golden cases for the kinds' rights")
	idf.register(cmd.Flags(), identity.DefaultNamespace)
	allowBreakingFlag(cmd, &allow)
	return cmd
}

// vetCases renders every golden case that should succeed and checks each
// child against the schema of its kind, then the first such case with the
// spec at the schema's bounds (vetBounds), and every such case with the
// longest CR name (vetNameLength, a warning written to warn, with the
// least limit of the cases).
func vetCases(g *globals, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, opts render.Options, warn io.Writer) error {
	var errs []error
	for i, k := range set.Kinds {
		paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
		if len(paths) == 0 {
			errs = append(errs, fmt.Errorf("kind %s: no golden case in %s", k.Name, filepath.Join(dir, k.Name)))
		}
		var base *vetBase
		var named []nameCase
		gates := map[string]bool{}
		for _, p := range paths {
			c, err := vetCase(k, p, opts)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			} else if c != nil {
				if base == nil {
					base = c
				}
				named = append(named, nameCase{path: p, parent: c.parent})
			}
			vetGates(k, c, opts, gates, warn)
		}
		if base != nil {
			if err := vetBounds(g.trialSetup(k), crds[i], *base); err != nil {
				errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
			}
		}
		if w := vetNameLength(k, named, opts); w != "" {
			fmt.Fprintln(warn, "warn", w)
		}
	}
	return errors.Join(errs...)
}

// vetGates warns, once each, where a gate of the render of a golden case
// can never open (render.GateWarnings) and where its status, conditions or
// ready read a field the child's kind does not have (render.ReadWarnings).
func vetGates(k *template.Kind, c *vetBase, opts render.Options, seen map[string]bool, warn io.Writer) {
	if c == nil {
		return
	}
	in := render.Inputs{Kind: k, Parent: c.parent}
	for _, w := range append(render.GateWarnings(in, opts), render.ReadWarnings(in, opts)...) {
		if !seen[w] {
			seen[w] = true
			fmt.Fprintf(warn, "warn kind %s: %s\n", k.Name, w)
		}
	}
}

// vetCase renders a golden case that should succeed and checks its
// children; it returns the case's parent and referenced objects, nil for a
// case that expects an error.
func vetCase(k *template.Kind, path string, opts render.Options) (*vetBase, error) {
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
	return &vetBase{parent: parent, referenced: referenced}, errors.Join(errs...)
}

func sectionData(ar *txtar.Archive, name string) []byte { return golden.Section(ar, name) }
