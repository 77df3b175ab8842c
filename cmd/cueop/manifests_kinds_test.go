package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/golden"
)

// readKindRules are the rules of every ClusterRole of a kinds.yaml.
func readKindRules(t *testing.T, path string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := golden.ParseObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rules []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rules = append(rules, role.Rules...)
	}
	return rules
}

// TestManifestsKindIdentities: the operator's own role no longer manages
// children; each kind's role grants its own children only; a kind bound
// in chosen namespaces gets a RoleBinding in each; the Deployment patch
// carries the flags.
func TestManifestsKindIdentities(t *testing.T) {
	out := t.TempDir()
	if msg, err := run(t, "manifests", "--out-dir", out, "--testdata", "../../testdata", "--samples", "../../config/samples",
		"--bind-namespaces", "Blog.blog.example.com=team-a,team-b", "--service-account", "WebApp.apps.example.com=webapps"); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	if grants(readRules(t, filepath.Join(out, rolePath)), "", "pods", "create") {
		t.Error("the operator's role grants create on pods")
	}
	kinds, err := os.ReadFile(filepath.Join(out, kindsPath))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := golden.ParseObjects(kinds)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	for _, want := range []string{"RoleBinding/team-a/cueop-blogs.blog.example.com", "RoleBinding/team-b/cueop-blogs.blog.example.com",
		"ClusterRoleBinding//cueop-cluster:blogs.blog.example.com", "ServiceAccount/cueop-system/webapps",
		"ClusterRoleBinding//cueop-redisclusters.cache.example.com", "Role/cueop-system/cueop-impersonate"} {
		if !slices.Contains(got, want) {
			t.Errorf("kinds.yaml lacks %s; has %v", want, got)
		}
	}
	if slices.Contains(got, "ClusterRoleBinding//cueop-blogs.blog.example.com") {
		t.Error("the Blog, bound in two namespaces, has a ClusterRoleBinding of its namespaced rights")
	}
	patch, _ := os.ReadFile(filepath.Join(out, patchPath))
	if !strings.Contains(string(patch), "Blog.blog.example.com=team-a,team-b") || !strings.Contains(string(patch), "WebApp.apps.example.com=webapps") {
		t.Errorf("generated patch lacks the identity flags:\n%s", patch)
	}
}

// TestVetPrintsIdentities: vet says what each kind acts as and may do.
func TestVetPrintsIdentities(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata", "--samples", "../../config/samples", "--crds", "../../crds")
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	want := "identity     RedisCluster.cache.example.com as cueop-system/cueop-redisclusters.cache.example.com: redisclusters.cache.example.com/finalizers update; configmaps get,list,watch,create,patch,update,delete;"
	if !strings.Contains(out, want) {
		t.Errorf("vet output lacks %q:\n%s", want, out)
	}
	// The kinds each template can render and reference, beside its
	// identity; where the template does not tell, a warning.
	for _, want := range []string{"     children     ConfigMap, Pod, Service\n     references   none\n",
		"     children     Deployment.apps, Ingress.networking.k8s.io, Job.batch, PersistentVolumeClaim, Service\n     references   ConfigMap\n",
		"templates/webapp/webapp.cue:72:14: references.settings: kind is computed (parent.spec.settingsFrom.kind)"} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
}
