package e2e

import (
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/source"
)

// TestRegistryConfigBuilds checks config/registry: config/default with the
// manager reading its templates from a registry, its module cache on an
// emptyDir and its credentials from the administrator's Secret.
func TestRegistryConfigBuilds(t *testing.T) {
	out, err := exec.Command("kubectl", "kustomize", "../config/registry").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize ../config/registry: %v\n%s", err, out)
	}
	objs, err := golden.ParseObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	typed(t, find(t, objs, "Deployment", "cueop-controller"), &dep)
	spec := dep.Spec.Template.Spec
	args := spec.Containers[0].Args
	var refs string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--templates="); ok {
			refs = v
		}
	}
	if _, err := source.ParseRefs(refs); err != nil || !source.IsRefs(refs) {
		t.Errorf("--templates=%q: %v", refs, err)
	}
	for _, want := range []string{"--module-cache=/var/cache/cueop/modules", "--registry-config=/etc/cueop/registry/.dockerconfigjson", "--leader-elect"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			vols["emptyDir "+v.Name] = true
		case v.Secret != nil && v.Secret.Optional != nil && *v.Secret.Optional:
			vols["secret "+v.Secret.SecretName] = true
		}
	}
	if !vols["emptyDir module-cache"] || !vols["secret cueop-registry-credentials"] || len(spec.Volumes) != 2 {
		t.Errorf("volumes %+v: want the module-cache emptyDir and the optional Secret cueop-registry-credentials", spec.Volumes)
	}
	// The pin record (--pin-record): get and update on its ConfigMap alone,
	// and create.
	var role rbacv1.Role
	typed(t, find(t, objs, "Role", "cueop-pins"), &role)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cueop-pins"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}
	if !reflect.DeepEqual(role.Rules, want) || role.Namespace != "cueop-system" {
		t.Errorf("Role %s/cueop-pins rules %+v, want %+v", role.Namespace, role.Rules, want)
	}
	find(t, objs, "RoleBinding", "cueop-pins")
	if sc := spec.Containers[0].SecurityContext; sc == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("the root filesystem is no longer read-only: %+v", sc)
	}
}
