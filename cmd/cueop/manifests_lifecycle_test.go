package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRoleGrantsPatchOnlyToRetainingKinds: the operator patches the
// finalizer of a CR whose render retains a child (onDelete: retain), and
// only then needs patch on the CR.
func TestRoleGrantsPatchOnlyToRetainingKinds(t *testing.T) {
	out, samples := t.TempDir(), t.TempDir()
	sample := "apiVersion: lifecycle.example.com/v1\nkind: Keeper\nmetadata: {name: s, namespace: default}\nspec: {service: true}\n"
	if err := os.WriteFile(filepath.Join(samples, "keeper.yaml"), []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := run(t, "--templates", "../../testdata/lifecycle/templates", "manifests", "--out-dir", out,
		"--testdata", "../../testdata/lifecycle/cases", "--samples", samples); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	rules := readRules(t, filepath.Join(out, "config/rbac/role.yaml"))
	requireGrants(t, rules, "lifecycle.example.com", "keepers", "get", "list", "watch", "patch")

	shipped := readRules(t, "../../config/rbac/role.yaml")
	for _, r := range []string{"redisclusters", "staticsites"} {
		for _, g := range []string{"cache.example.com", "web.example.com"} {
			if grants(shipped, g, r, "patch") {
				t.Errorf("the shipped role grants patch on %s.%s, whose templates retain nothing", r, g)
			}
		}
	}
}
