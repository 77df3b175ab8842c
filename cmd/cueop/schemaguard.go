package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// allowBreakingFlag adds --allow-breaking to cmd: the kinds (Kind.group)
// whose breaking schema change is deliberate.
func allowBreakingFlag(cmd *cobra.Command, allow *[]string) {
	cmd.Flags().StringSliceVar(allow, "allow-breaking", nil,
		"kinds (Kind.group, comma-separated or repeated) whose breaking schema change against the committed CRD is deliberate")
}

// checkCommittedCRDs compares each kind's CRD, crds[i] of set.Kinds[i],
// with the one committed in dir (<name>.yaml; a kind without one is new),
// and refuses a breaking change to a version the committed CRD serves
// (schemacompat), unless the kind is in allow. Each acknowledged change is
// written to w.
func checkCommittedCRDs(w io.Writer, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, allow []string) error {
	var errs []error
	for i, crd := range crds {
		path := filepath.Join(dir, crd.Name+".yaml")
		old, err := readCRD(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		breaking := schemacompat.Breaking(schemacompat.CompareCRDs(old, crd))
		if len(breaking) == 0 {
			continue
		}
		k := set.Kinds[i]
		crdgen.Locate(k, breaking)
		id := k.Resource.Kind + "." + k.Resource.Group
		r := &schemacompat.Refusal{Kind: id, Changes: breaking, Stored: -1, Source: path, Acknowledge: "--allow-breaking=" + id}
		if slices.Contains(allow, id) {
			fmt.Fprintf(w, "warn %s: breaking schema change against %s, acknowledged (--allow-breaking)%s\n", id, path, r.Details())
			continue
		}
		errs = append(errs, r)
	}
	return errors.Join(errs...)
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}
