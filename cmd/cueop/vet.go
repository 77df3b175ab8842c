package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/tools/txtar"

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
			if _, err := generateCRDs(set); err != nil {
				return err
			}
			if err := vetCases(set, dir, opts); err != nil {
				return err
			}
			for _, k := range set.Kinds {
				fmt.Fprintf(cmd.OutOrStdout(), "ok   %s (%s, revision %s)\n", k.Name, k.Resource.GroupVersionKind(), k.Revision)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "testdata", "./testdata", "directory of the golden cases")
	return cmd
}

// vetCases renders every golden case that should succeed and checks each
// child against the schema of its kind.
func vetCases(set *template.Set, dir string, opts render.Options) error {
	var errs []error
	for _, k := range set.Kinds {
		paths, _ := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
		if len(paths) == 0 {
			errs = append(errs, fmt.Errorf("kind %s: no golden case in %s", k.Name, filepath.Join(dir, k.Name)))
		}
		for _, p := range paths {
			if err := vetCase(k, p, opts); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

func vetCase(k *template.Kind, path string, opts render.Options) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ar := txtar.Parse(data)
	for _, f := range ar.Files {
		if f.Name == golden.SectionError {
			return nil
		}
	}
	parent, err := golden.ParseParent(sectionData(ar, golden.SectionParent), k)
	if err != nil {
		return err
	}
	res, err := render.Render(k, parent, nil, opts)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range res.Children {
		if _, err := kschema.Typed(c.Object); err != nil && !errors.Is(err, kschema.ErrUnknownKind) {
			errs = append(errs, fmt.Errorf("children.%s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

func sectionData(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}
