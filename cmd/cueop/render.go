package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template"
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
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	cr, others, err := pickCR(set, objs)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	gvk := cr.GroupVersionKind()
	k := set.Lookup(gvk.Group, gvk.Kind)
	parent, err := golden.Parent(cr, k)
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
	if len(others) > 0 {
		// The file is what `kubectl apply -f` creates beside the CR (a
		// sample with the ConfigMap it reads): the template may read them,
		// one without a namespace in "default", as kubectl would put it.
		for _, o := range others {
			if o.GetNamespace() == "" {
				o = o.DeepCopy()
				o.SetNamespace("default")
			}
			referenced = append(referenced, o)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "cueop render: %s: rendering %s; the template may read the file's other objects as referenced objects: %s\n",
			file, renderDescribe(cr), renderDescribeAll(others))
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

// pickCR finds the one custom resource among objs, those of a kind a
// template of set serves, and returns it and the other objects. Anything
// else is an error naming what the file holds and what the templates
// serve: no object, none of a template's kind, a template's kind at a
// version it does not serve, several.
func pickCR(set *template.Set, objs []*unstructured.Unstructured) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	var crs, others []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		k := set.Lookup(gvk.Group, gvk.Kind)
		switch {
		case k == nil:
			others = append(others, o)
		case k.Version(gvk.Version) == nil:
			return nil, nil, fmt.Errorf("%s is at version %s, which no template serves (%s)", renderDescribe(o), gvk.Version, renderServedKind(k))
		default:
			crs = append(crs, o)
		}
	}
	switch {
	case len(objs) == 0:
		return nil, nil, fmt.Errorf("holds no object: want a custom resource of a kind the templates serve (%s)", renderServedKinds(set))
	case len(crs) == 0:
		return nil, nil, fmt.Errorf("holds %s and no custom resource: no template serves %s (the templates serve %s)",
			renderDescribeAll(objs), objs[0].GroupVersionKind(), renderServedKinds(set))
	case len(crs) > 1:
		return nil, nil, fmt.Errorf("holds %d custom resources (%s): render takes one; put each in a file of its own", len(crs), renderDescribeAll(crs))
	}
	return crs[0], others, nil
}

// renderDescribe names an object of a file: "Secret ns/name (v1)".
func renderDescribe(o *unstructured.Unstructured) string {
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	if name == "" {
		name = "without a name"
	}
	kind := o.GetKind()
	if kind == "" {
		kind = "an object without a kind"
	}
	return kind + " " + name + " (" + o.GetAPIVersion() + ")"
}

func renderDescribeAll(objs []*unstructured.Unstructured) string {
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = renderDescribe(o)
	}
	return strings.Join(names, ", ")
}

// renderServedKind is "RedisCluster at cache.example.com/v1, v2".
func renderServedKind(k *template.Kind) string {
	versions := make([]string, len(k.Versions))
	for i, v := range k.Versions {
		versions[i] = v.Name
	}
	if len(versions) == 0 {
		versions = []string{k.Resource.Version}
	}
	return k.Resource.Kind + " at " + k.Resource.Group + "/" + strings.Join(versions, ", ")
}

func renderServedKinds(set *template.Set) string {
	if len(set.Kinds) == 0 {
		return "no kind"
	}
	kinds := make([]string, len(set.Kinds))
	for i, k := range set.Kinds {
		kinds[i] = renderServedKind(k)
	}
	return strings.Join(kinds, "; ")
}
