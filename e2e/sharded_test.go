package e2e

import (
	"os/exec"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cueop/cueop/engine/golden"
)

// TestShardedConfigBuilds checks config/sharded: config/default with the
// Deployment at 3 replicas of `cueop run --shards=6` (no leader election)
// and a Role that lets them hold and clean up their Leases.
func TestShardedConfigBuilds(t *testing.T) {
	out, err := exec.Command("kubectl", "kustomize", "../config/sharded").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize ../config/sharded: %v\n%s", err, out)
	}
	objs, err := golden.ParseObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	typed(t, find(t, objs, "Deployment", "cueop-controller"), &dep)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", dep.Spec.Replicas)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--shards=6") || slices.Contains(args, "--leader-elect") {
		t.Errorf("args %v: want --shards=6 and no --leader-elect", args)
	}
	if dep.Namespace != systemNS {
		t.Errorf("Deployment in %q, want %q", dep.Namespace, systemNS)
	}
	var role rbacv1.Role
	typed(t, find(t, objs, "Role", "cueop-shard-leases"), &role)
	var verbs []string
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") {
			verbs = append(verbs, r.Verbs...)
		}
	}
	for _, v := range []string{"get", "list", "watch", "create", "update", "delete"} {
		if !slices.Contains(verbs, v) {
			t.Errorf("Role cueop-shard-leases lacks %s on leases (has %v)", v, verbs)
		}
	}
	var binding rbacv1.RoleBinding
	typed(t, find(t, objs, "RoleBinding", "cueop-shard-leases"), &binding)
	if binding.RoleRef.Name != "cueop-shard-leases" || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Name != "cueop-controller" || binding.Subjects[0].Namespace != systemNS {
		t.Errorf("RoleBinding cueop-shard-leases: %+v %+v", binding.RoleRef, binding.Subjects)
	}
}
