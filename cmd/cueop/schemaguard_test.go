package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editedTemplates is a copy of the project's templates with edit applied
// to the RedisCluster template (its hub file, which edit must change, and
// its v2 spoke, whose conversions name the hub's fields).
func editedTemplates(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(dir, os.DirFS("../../templates")); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"rediscluster.cue", "v2.cue"} {
		p := filepath.Join(dir, "rediscluster", name)
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		next := edit(string(src))
		if i == 0 && next == string(src) {
			t.Fatal("edit changed nothing")
		}
		if err := os.WriteFile(p, []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// renameReplicas renames spec.replicas to spec.size wherever the template
// names it (the v2 spoke's conversions too), so that the template itself
// is valid.
func renameReplicas(src string) string {
	return strings.NewReplacer(".spec.replicas", ".spec.size", "\treplicas: *3", "\tsize: *3", "<=replicas", "<=size", "\treplicas: in.spec.size", "\tsize: in.spec.size").Replace(src)
}

// TestVetRefusesBreakingSchemaChange: `cueop vet` compares the templates'
// CRDs with those in crds/ and fails on the rename of a field, naming it,
// its CUE position and the acknowledgement; acknowledged, it warns.
func TestVetRefusesBreakingSchemaChange(t *testing.T) {
	dir := editedTemplates(t, renameReplicas)
	_, err := run(t, "vet", "--templates", dir, "--crds", "../../crds", "--testdata", "../../testdata")
	for _, want := range []string{
		"RedisCluster.cache.example.com: breaking schema change refused: the CRD in ../../crds/redisclusters.cache.example.com.yaml serves the version it changes",
		"--allow-breaking=RedisCluster.cache.example.com",
		"v1 spec.replicas -> spec.size: renamed (at " + filepath.Join(dir, "rediscluster", "rediscluster.cue") + ":31:2)",
		"way forward: ",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vet: error %v, want %q", err, want)
		}
	}
	out, err := run(t, "vet", "--templates", dir, "--crds", "../../crds", "--testdata", "../../testdata", "--allow-breaking", "RedisCluster.cache.example.com")
	if err != nil && strings.Contains(err.Error(), "breaking schema change refused") {
		t.Errorf("vet --allow-breaking refused the change: %v", err)
	}
	if !strings.Contains(out, "warn RedisCluster.cache.example.com: breaking schema change against ../../crds/redisclusters.cache.example.com.yaml, acknowledged") {
		t.Errorf("vet --allow-breaking does not warn:\n%s", out)
	}
}

// TestManifestsRefuseToOverwriteBreakingCRD: `cueop manifests` (make crds)
// leaves a committed CRD as it is when the templates break its schema, and
// writes it when acknowledged.
func TestManifestsRefuseToOverwriteBreakingCRD(t *testing.T) {
	dir := editedTemplates(t, func(s string) string { return strings.Replace(s, "int & >=1 & <=100", "int & >=1 & <=50", 1) })
	out := t.TempDir()
	if err := os.CopyFS(filepath.Join(out, "crds"), os.DirFS("../../crds")); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join(out, "crds", "redisclusters.cache.example.com.yaml")
	before, _ := os.ReadFile(committed)
	args := []string{"manifests", "--templates", dir, "--out-dir", out, "--testdata", "../../testdata", "--samples", "../../config/samples"}
	_, err := run(t, args...)
	if err == nil || !strings.Contains(err.Error(), "v1 spec.replicas: maximum <=100 -> <=50 (at ") {
		t.Errorf("manifests: error %v, want the narrowed maximum refused", err)
	}
	if after, _ := os.ReadFile(committed); string(after) != string(before) {
		t.Errorf("manifests overwrote the committed CRD")
	}
	if msg, err := run(t, append(args, "--allow-breaking=RedisCluster.cache.example.com")...); err != nil {
		t.Fatalf("manifests --allow-breaking: %v\n%s", err, msg)
	}
	if after, _ := os.ReadFile(committed); !strings.Contains(string(after), "maximum: 50") {
		t.Errorf("manifests --allow-breaking did not write the new CRD:\n%s", after)
	}
}
