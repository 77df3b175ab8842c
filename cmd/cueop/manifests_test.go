package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/tools/txtar"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
)

// TestManifestsUpToDate fails when a file `make crds` (cueop manifests)
// writes is not what is checked in, or crds/ holds a stale file.
func TestManifestsUpToDate(t *testing.T) {
	out := t.TempDir()
	if msg, err := run(t, "manifests", "--out-dir", out, "--testdata", "../../testdata", "--samples", "../../config/samples"); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	generated := walkFiles(t, out)
	for _, rel := range generated {
		want, _ := os.ReadFile(filepath.Join(out, rel))
		got, err := os.ReadFile(filepath.Join("../..", rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale (%v): run make crds", rel, err)
		}
	}
	for _, rel := range walkFiles(t, "../../crds") {
		if !slices.Contains(generated, filepath.Join("crds", rel)) {
			t.Errorf("crds/%s is not generated any more: run make crds", rel)
		}
	}
}

// walkFiles lists the files below dir, relative to it.
func walkFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readRules(t *testing.T, path string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole // a Role's rules read the same
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(role.Rules) == 0 {
		t.Fatalf("%s: no rule", path)
	}
	return role.Rules
}

func TestRBACHasNoWildcard(t *testing.T) {
	for _, path := range []string{"../../config/rbac/role.yaml", "../../config/rbac/leader_election_role.yaml"} {
		for i, r := range readRules(t, path) {
			all := slices.Concat(r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs)
			if slices.ContainsFunc(all, func(s string) bool { return strings.Contains(s, "*") }) {
				t.Errorf("%s: rule %d has a wildcard: %+v", path, i, r)
			}
			if len(r.NonResourceURLs) > 0 || slices.ContainsFunc(r.Verbs, isPowerVerb) {
				t.Errorf("%s: rule %d grants more than a controller needs: %+v", path, i, r)
			}
		}
	}
}

func isPowerVerb(v string) bool {
	return v == "escalate" || v == "bind" || v == "impersonate" || v == "deletecollection"
}

// grants reports whether rules allow verb on group/resource.
func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// TestRoleCoversGoldenChildren checks the checked-in roles (the operator's
// and the kinds' together) against every
// child kind of every golden case, both the expected children.yaml and what
// the templates render now, and against every kind's CR and status.
func TestRoleCoversGoldenChildren(t *testing.T) {
	rules := append(readRules(t, "../../config/rbac/role.yaml"), readKindRules(t, "../../config/rbac/kinds.yaml")...)
	set := templatetest.Load(t, "../../templates")
	kinds := map[schema.GroupKind]string{}
	for _, k := range set.Kinds {
		paths, _ := filepath.Glob(filepath.Join("../../testdata", k.Name, "*.txtar"))
		for _, p := range paths {
			addCaseKinds(t, kinds, k, p)
		}
		requireGrants(t, rules, k.Resource.Group, k.Resource.Plural, "get", "list", "watch")
		requireGrants(t, rules, k.Resource.Group, k.Resource.Plural+"/status", "get", "patch", "update")
	}
	if len(kinds) == 0 {
		t.Fatal("no child kind found in the golden cases")
	}
	for gk, source := range kinds {
		plural := template.Pluralize(strings.ToLower(gk.Kind))
		if !requireGrants(t, rules, gk.Group, plural, identity.ChildVerbs...) {
			t.Errorf("  (child kind %s, from %s)", gk, source)
		}
	}
}

func requireGrants(t *testing.T, rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	t.Helper()
	ok := true
	for _, v := range verbs {
		if !grants(rules, group, resource, v) {
			t.Errorf("config/rbac/role.yaml does not grant %s on %s in group %q", v, resource, group)
			ok = false
		}
	}
	return ok
}

// addCaseKinds adds the child kinds of one golden case: its expected
// children.yaml and its render now.
func addCaseKinds(t *testing.T, kinds map[schema.GroupKind]string, k *template.Kind, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(data)
	objs, err := golden.ParseObjects(sectionData(ar, golden.SectionChildren))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if parent, err := golden.ParseParent(sectionData(ar, golden.SectionParent), k); err == nil {
		if res, err := render.Render(k, parent, nil, render.Options{}); err == nil {
			for _, c := range res.Children {
				objs = append(objs, c.Object)
			}
		}
	}
	for _, o := range objs {
		if gk := o.GroupVersionKind().GroupKind(); kinds[gk] == "" {
			kinds[gk] = path
		}
	}
}

func TestManifestsRefuseChildOutsideAllowList(t *testing.T) {
	_, err := run(t, "--allowed-kinds", "Pod,Service", "manifests", "--out-dir", t.TempDir(),
		"--testdata", "../../testdata", "--samples", "../../config/samples")
	if err == nil || !strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("manifests with allowed kinds Pod,Service: %v; want a refusal of the ConfigMap children", err)
	}
}

// TestTemplatesConfigMapKeepsBytes round-trips awkward files through the
// generated ConfigMap: the YAML must give back every byte.
func TestTemplatesConfigMapKeepsBytes(t *testing.T) {
	files := map[string]string{
		"cue.mod/module.cue": "module: \"x.example/t@v0\"\n",
		"a/tabs.cue":         "package a\n\tx: 1\n",
		"a/no-newline.txt":   "last line",
		"a/trailing.txt":     "spaces   \n\n\n",
		"a/leading.txt":      "  indented first line\nnext\n",
		"b/binary.bin":       "\xff\x00\xfe",
		"b/empty":            "",
	}
	tf, err := templateFiles(testkit.Dir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	y, err := templatesConfigMapYAML(tf)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(y, &cm); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	for _, f := range tf {
		got, ok := cm.Data[f.key]
		if b, isBinary := cm.BinaryData[f.key]; isBinary {
			got, ok = string(b), true
		}
		if !ok || got != files[f.path] {
			t.Errorf("%s (key %s): got %q, want %q", f.path, f.key, got, files[f.path])
		}
	}
	if len(tf) != len(files) {
		t.Errorf("%d files in the ConfigMap, want %d", len(tf), len(files))
	}
}

func TestTemplatesConfigMapRefusesKeyClash(t *testing.T) {
	dir := testkit.Dir(t, map[string]string{"a/b.cue": "", "a_b.cue": ""})
	if _, err := templateFiles(dir); err == nil || !strings.Contains(err.Error(), "same ConfigMap key") {
		t.Fatalf("templateFiles: %v; want a key clash of a/b.cue and a_b.cue", err)
	}
}

func TestAllowedKindsFromEnv(t *testing.T) {
	t.Setenv(allowedKindsEnv, "Pod,Service")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "Pod,Service"},
		{[]string{"--allowed-kinds", "ConfigMap", "probe"}, "ConfigMap"},
		{[]string{"probe", "--allowed-kinds=Job.batch"}, "Job.batch"},
	} {
		g := &globals{}
		root := &cobra.Command{Use: "cueop"}
		root.PersistentFlags().StringVar(&g.allowedKinds, "allowed-kinds", render.DefaultAllowedKinds, "")
		root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
			allowedKindsFromEnv(cmd, g)
			return nil
		}})
		root.SetArgs(c.args)
		if err := root.Execute(); err != nil || g.allowedKinds != c.want {
			t.Errorf("%v: allowed kinds %q (%v), want %q", c.args, g.allowedKinds, err, c.want)
		}
	}
}
