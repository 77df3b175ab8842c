package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/golden"
)

func newRender(g *globals) *cobra.Command {
	var file, observed, referenced string
	var withStatus bool
	cmd := &cobra.Command{
		Use:   "render -f cr.yaml",
		Short: "Print the children (and status) a custom resource renders to, offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd, g, renderFiles{file, observed, referenced}, withStatus)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the custom resource (YAML)")
	cmd.Flags().StringVar(&observed, "observed", "", "YAML stream of live children, matched to ids by group, kind and name")
	cmd.Flags().StringVar(&referenced, "referenced", "", "YAML stream of the objects the template may reference, read in the CR's namespace")
	cmd.Flags().BoolVar(&withStatus, "status", false, "also print the status and readiness")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// renderFiles are the inputs of `cueop render`.
type renderFiles struct{ cr, observed, referenced string }

func runRender(cmd *cobra.Command, g *globals, files renderFiles, withStatus bool) error {
	file := files.cr
	set, opts, err := g.loadForRender()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	objs, err := golden.ParseObjects(data)
	if err != nil || len(objs) != 1 {
		return fmt.Errorf("%s: want one custom resource (%v)", file, err)
	}
	gvk := objs[0].GroupVersionKind()
	k := set.Lookup(gvk.Group, gvk.Kind)
	if k == nil || k.Version(gvk.Version) == nil {
		return fmt.Errorf("%s: no template serves %s", file, gvk)
	}
	parent, err := golden.ParseParent(data, k)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	live, err := readObjects(files.observed)
	if err != nil {
		return err
	}
	referenced, err := readObjects(files.referenced)
	if err != nil {
		return err
	}
	res, err := golden.RenderCase(k, parent, live, referenced, opts)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	out := cmd.OutOrStdout()
	out.Write(golden.ChildrenYAML(res.Children))
	if withStatus {
		fmt.Fprintf(out, "---\n# status\n%s", golden.StatusYAML(res))
	}
	return nil
}

func readObjects(file string) ([]*unstructured.Unstructured, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	objs, err := golden.ParseObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}
