package main

import (
	"path/filepath"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestRoleGrantsPatchOnlyToRetainingKinds: the operator patches the
// finalizer of a CR whose render retains a child (onDelete: retain), or
// the managedFields of a CR of a kind with several versions (the storage
// migration), and only then needs patch on the CR.
func TestRoleGrantsPatchOnlyToRetainingKinds(t *testing.T) {
	out := t.TempDir()
	samples := testkit.Dir(t, map[string]string{"keeper.yaml": "apiVersion: lifecycle.example.com/v1\nkind: Keeper\nmetadata: {name: s, namespace: default}\nspec: {service: true}\n"})
	if msg, err := run(t, "--templates", "../../testdata/lifecycle/templates", "manifests", "--out-dir", out,
		"--testdata", "../../testdata/lifecycle/cases", "--samples", samples); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	rules := readRules(t, filepath.Join(out, "config/rbac/role.yaml"))
	requireGrants(t, rules, "lifecycle.example.com", "keepers", "get", "list", "watch", "patch")

	shipped := readRules(t, "../../config/rbac/role.yaml")
	if grants(shipped, "web.example.com", "staticsites", "patch") {
		t.Errorf("the shipped role grants patch on staticsites.web.example.com, whose templates retain nothing and which has one version")
	}
	requireGrants(t, shipped, "cache.example.com", "redisclusters", "patch") // v1 and v2
}
