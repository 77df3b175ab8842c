package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
)

func newCRD(g *globals) *cobra.Command {
	var outDir string
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Print the CustomResourceDefinitions of every kind, offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := g.load()
			if err != nil {
				return err
			}
			crds, err := generateCRDs(set)
			if err != nil {
				return err
			}
			if outDir != "" {
				return writeCRDs(outDir, crds)
			}
			for _, crd := range crds {
				y, err := crdgen.YAML(crd)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "---\n%s", y)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&outDir, "out-dir", "", "write one file per CRD into this directory (stale files removed)")
	return cmd
}

// generateCRDs generates and validates the CRD of every kind.
func generateCRDs(set *template.Set) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, k := range set.Kinds {
		crd, err := crdgen.Generate(k)
		if err != nil {
			return nil, fmt.Errorf("kind %s: %w", k.Name, err)
		}
		if err := crdgen.Validate(crd); err != nil {
			return nil, fmt.Errorf("kind %s: generated CRD is invalid: %w", k.Name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

func writeCRDs(dir string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		y, err := crdgen.YAML(crd)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, crd.Name+".yaml"), y, 0o644); err != nil {
			return err
		}
	}
	return nil
}
