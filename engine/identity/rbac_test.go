package identity

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
)

var blog = Kind{GroupKind: schema.GroupKind{Group: "blog.example.com", Kind: "Blog"}, Plural: "blogs",
	Children: render.MustKindSet("Deployment.apps,PersistentVolumeClaim"), References: render.MustKindSet("ConfigMap")}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

// TestClusterRulesGrantStorageClasses: a kind may get StorageClasses
// exactly when it renders PersistentVolumeClaims (a wave gate reads a
// Pending claim's class).
func TestClusterRulesGrantStorageClasses(t *testing.T) {
	if r := (Kind{Children: render.MustKindSet("ConfigMap")}).ClusterRules(); r != nil {
		t.Errorf("rules without claims: %v", r)
	}
	r := blog.ClusterRules()
	if len(r) != 1 || r[0].APIGroups[0] != "storage.k8s.io" || r[0].Resources[0] != "storageclasses" || strings.Join(r[0].Verbs, ",") != "get" {
		t.Errorf("rules with claims: %v, want get on storage.k8s.io storageclasses", r)
	}
}

func TestKindRules(t *testing.T) {
	rules := blog.NamespacedRules()
	for _, c := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"apps", "deployments", "create", true},
		{"", "persistentvolumeclaims", "delete", true},
		{"", "configmaps", "watch", true},
		{"", "configmaps", "create", false},
		{"blog.example.com", "blogs/finalizers", "update", true},
		{"blog.example.com", "blogs", "get", false},
		{"", "pods", "create", false},
	} {
		if got := grants(rules, c.group, c.resource, c.verb); got != c.want {
			t.Errorf("%s %s.%s: %v, want %v", c.verb, c.resource, c.group, got, c.want)
		}
	}
	if op := Operator([]Kind{blog}, nil); grants(op, "apps", "deployments", "create") || !grants(op, "blog.example.com", "blogs/status", "patch") {
		t.Errorf("operator rules: %v", op)
	}
	if sh := Shared([]Kind{blog}, nil, render.MustKindSet("ConfigMap,Secret")); !grants(sh, "apps", "deployments", "create") || !grants(sh, "", "secrets", "get") {
		t.Errorf("shared rules: %v", sh)
	}
}

func TestObjectsBoundInNamespaces(t *testing.T) {
	cfg := &Config{}
	if err := cfg.ParseNamespaces([]string{"Blog.blog.example.com=b,a"}); err != nil {
		t.Fatal(err)
	}
	op := ServiceAccount{Namespace: "cueop-system", Name: "cueop-controller"}
	var got []string
	for _, o := range Objects([]Identity{For(blog, cfg)}, op) {
		got = append(got, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName())
		if r, ok := o.(*rbacv1.Role); ok && (!slices.Equal(r.Rules[0].ResourceNames, []string{"cueop-blogs.blog.example.com"}) || r.Rules[0].Verbs[0] != "impersonate") {
			t.Errorf("impersonation role: %+v", r.Rules)
		}
	}
	want := []string{"ServiceAccount/cueop-system/cueop-blogs.blog.example.com", "ClusterRole//cueop-blogs.blog.example.com",
		"RoleBinding/a/cueop-blogs.blog.example.com", "RoleBinding/b/cueop-blogs.blog.example.com",
		"ClusterRole//cueop-cluster:blogs.blog.example.com", "ClusterRoleBinding//cueop-cluster:blogs.blog.example.com",
		"Role/cueop-system/cueop-impersonate", "RoleBinding/cueop-system/cueop-impersonate"}
	if !slices.Equal(got, want) {
		t.Errorf("objects\n got %v\nwant %v", got, want)
	}
	if s := For(blog, cfg).String(); !strings.HasPrefix(s, "Blog.blog.example.com as cueop-system/cueop-blogs.blog.example.com in a,b: blogs.blog.example.com/finalizers update; ") ||
		!strings.Contains(s, "deployments.apps get,list,watch,create,patch,update,delete") || !strings.HasSuffix(s, "storageclasses.storage.k8s.io get") {
		t.Errorf("String: %s", s)
	}
}
