package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// The Blog test kind: a retained claim, a wave-0 migration Job named
// <CR name>-migrate-schema, wave-1 Deployment and Service.
const (
	authorsTemplates = "../../testdata/authors/templates"
	authorsCases     = "../../testdata/authors/cases"
)

// TestCRDErrorNamesKindOnce: a CRD that cannot be generated is named once
// (`kind blog: crd blogs...`), not `kind blog: kind blog: crd ...`.
func TestCRDErrorNamesKindOnce(t *testing.T) {
	dir := testkit.CopyDir(t, authorsTemplates)
	testkit.EditFile(t, filepath.Join(dir, "blog/blog.cue"), testkit.Replace("availableReplicas: int\n", "availableReplicas: int\n\tconditions: [...{type: string}]\n"))
	_, err := run(t, "--templates", dir, "crd")
	if err == nil || !strings.HasPrefix(err.Error(), "kind blog: crd blogs.authors.example.com: #Status.conditions") || strings.Count(err.Error(), "kind blog") != 1 {
		t.Errorf("crd: %v, want the kind named once", err)
	}
}

// TestVetNamesChildThatLimitsCRNames: the name-length warning blames the
// Job, whose 63 characters limit the Blog's name to 48, not the claim at
// 253.
func TestVetNamesChildThatLimitsCRNames(t *testing.T) {
	out, err := run(t, "--templates", authorsTemplates, "vet", "--testdata", authorsCases, "--crds", t.TempDir())
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	want := `warn kind blog: CR names of up to 48 characters render, though the API server allows 253: with 49, `
	if !strings.Contains(out, want) || !strings.Contains(out, `children.migrate: metadata.name "<CR name>-migrate-schema"`) || strings.Contains(out, "PersistentVolumeClaim's name") {
		t.Errorf("vet output lacks %q naming the Job:\n%s", want, out)
	}
}
