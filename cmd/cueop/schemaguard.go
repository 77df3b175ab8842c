package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/template"
)

// allowBreakingFlag adds --allow-breaking to cmd: the kinds (Kind.group)
// whose breaking schema change is deliberate.
func allowBreakingFlag(cmd *cobra.Command, allow *[]string) {
	cmd.Flags().StringSliceVar(allow, "allow-breaking", nil,
		"kinds (Kind.group, comma-separated or repeated) whose breaking schema change against the committed CRD is deliberate")
}

// checkCommittedCRDs compares each kind's CRD, crds[i] of set.Kinds[i],
// with the one committed under dir: the CRD of the same metadata.name in
// any YAML file there (schemaguard.Committed), whatever the file is named.
// It refuses a breaking change to a version the committed CRD serves
// (schemaguard.CheckCommitted), unless the kind is in allow. Each
// acknowledged change is written to w. A kind with no committed CRD is new
// to it; with reportMissing it is written to w as a warning (vet: its
// schema is not guarded).
func checkCommittedCRDs(w io.Writer, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, allow []string, reportMissing bool) error {
	committed, err := schemaguard.Committed(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i, crd := range crds {
		k := set.Kinds[i]
		id := k.Resource.ID()
		found := committed[crd.Name]
		if len(found) == 0 && reportMissing {
			fmt.Fprintf(w, "warn %s: no committed CRD named %s in a YAML file under %s: its schema change is not checked (a new kind, or --crds is not where the CRDs are committed)\n", id, crd.Name, dir)
		}
		for _, c := range found {
			r := schemaguard.CheckCommitted(k, c.CRD, crd, c.Path, "--allow-breaking="+id)
			switch {
			case r == nil:
			case slices.Contains(allow, id):
				fmt.Fprintf(w, "warn %s: breaking schema change against %s, acknowledged (--allow-breaking)%s\n", id, c.Path, r.Details())
			default:
				errs = append(errs, r)
			}
		}
	}
	return errors.Join(errs...)
}
