package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/tools/txtar"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/admission"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/identity"
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
			for _, k := range set.Kinds {
				for _, w := range k.ReferencesUnknown { // template/condrefs.go
					fmt.Fprintf(cmd.ErrOrStderr(), "warn kind %s: %s\n", k.Name, w)
				}
			}
			crds, err := generateCRDs(set)
			if err != nil {
				return err
			}
			if err := checkCommittedCRDs(cmd.ErrOrStderr(), set, crds, crdsDir, allow, true); err != nil { // schemaguard.go
				return err
			}
			if err := errors.Join(vetCases(cmd.Context(), g, set, crds, dir, opts, cmd.ErrOrStderr()), vetGolden(cmd.OutOrStdout(), set, dir, opts),
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

// vetCases runs the admission of every kind (engine/admission: its golden
// cases that should succeed and CRs built from its schema rendered, each
// child checked against the schema of its kind, absent reads and gates
// that never open written to warn), then, from the first case admitted,
// the spec at the schema's bounds (vetBounds), and every case admitted
// with the longest CR name (vetNameLength, a warning written to warn,
// with the least limit of the cases).
func vetCases(ctx context.Context, g *globals, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, opts render.Options, warn io.Writer) error {
	var errs []error
	for i, k := range set.Kinds {
		paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
		if len(paths) == 0 {
			errs = append(errs, fmt.Errorf("kind %s: no golden case in %s", k.Name, filepath.Join(dir, k.Name)))
		}
		cases, err := readCases(k, paths)
		errs = append(errs, err)
		v := admission.Admit(ctx, admission.Input{Kind: k, Options: opts, Eval: render.InProcess{}, CRD: crds[i], Cases: cases})
		for _, w := range v.Warnings {
			fmt.Fprintf(warn, "warn kind %s: %s\n", k.Name, w.Message)
		}
		errs = append(errs, v.Err())
		var named []nameCase
		for _, c := range cases {
			if !c.WantsError && !v.RefusedSource(c.Name) {
				named = append(named, nameCase{path: c.Name, parent: c.Parent, referenced: c.Referenced})
			}
		}
		if len(named) > 0 {
			if err := vetBounds(g.trialSetup(k), crds[i], vetBase{parent: named[0].parent, referenced: named[0].referenced}); err != nil {
				errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
			}
		}
		if w := vetNameLength(k, named, opts); w != "" {
			fmt.Fprintln(warn, "warn", w)
		}
	}
	return errors.Join(errs...)
}

// readCases reads the golden cases of k at paths, named by their paths;
// one that cannot be read is an error and left out.
func readCases(k *template.Kind, paths []string) ([]admission.Case, error) {
	var cases []admission.Case
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err == nil {
			var c admission.Case
			if c, err = admission.ParseCase(k, p, data); err == nil {
				cases = append(cases, c)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return cases, errors.Join(errs...)
}

// vetReferences refuses, before anything renders, the references the
// templates write as literals to kinds outside the readable ones
// (admission.References).
func vetReferences(set *template.Set, readable render.KindSet) error {
	var errs []error
	for _, k := range set.Kinds {
		for _, f := range admission.References(k, readable) {
			errs = append(errs, errors.New(f.String()))
		}
	}
	return errors.Join(errs...)
}

func sectionData(ar *txtar.Archive, name string) []byte { return golden.Section(ar, name) }
