package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
)

func newCRD(g *globals) *cobra.Command {
	var outDir string
	var explain bool
	var allow []string
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Print the CustomResourceDefinitions of every kind, offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := g.load()
			if err != nil {
				return err
			}
			if explain {
				for _, k := range set.Kinds {
					fmt.Fprintf(cmd.OutOrStdout(), "%s (%s)\n", k.Name, k.Resource.GroupVersionKind())
					if err := explainKind(cmd.OutOrStdout(), k); err != nil {
						return err
					}
				}
				return nil
			}
			crds, err := generateCRDs(set)
			if err != nil {
				return err
			}
			if outDir != "" {
				if err := checkCommittedCRDs(cmd.ErrOrStderr(), set, crds, outDir, allow, false); err != nil { // schemaguard.go
					return err
				}
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
	cmd.Flags().StringVar(&outDir, "out-dir", "", "write one file per CRD into this directory (stale files removed); a breaking change to a CRD there is refused")
	allowBreakingFlag(cmd, &allow)
	cmd.Flags().BoolVar(&explain, "explain", false, "list, per kind, the constraints of #Spec beyond the OpenAPI schema: "+
		"those the CRD enforces at admission (CEL rules) and those left to render")
	return cmd
}

// generateCRDs generates and validates the CRD of every kind.
func generateCRDs(set *template.Set) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, k := range set.Kinds {
		crd, err := crdgen.Generate(k)
		if err != nil {
			return nil, err // names the kind and the CRD
		}
		if err := crdgen.Validate(crd); err != nil {
			return nil, fmt.Errorf("kind %s: generated CRD is invalid: %w", k.Name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// explainKind lists the constraints of k's #Spec beyond the OpenAPI schema:
// "admission" for those a CEL rule of the CRD enforces, "render only" for
// the others, with the reason. Types, bounds, enums, patterns and lengths
// are in the schema and not listed.
func explainKind(w io.Writer, k *template.Kind) error {
	_, rules, err := crdgen.Explain(k)
	if err != nil {
		return err // names the kind and the CRD
	}
	for _, r := range rules {
		where := ""
		if r.Pos.IsValid() {
			where = " (" + template.ShortPos(r.Pos) + ")"
		}
		if r.Admission() {
			fmt.Fprintf(w, "     admission    %s%s: CEL rule on %s: %s\n", r.What, where, r.At, r.Rule)
		} else {
			fmt.Fprintf(w, "     render only  %s%s: %s\n", r.What, where, r.Reason)
		}
	}
	return nil
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
