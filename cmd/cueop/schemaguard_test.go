package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// editedTemplates is a copy of the project's templates with edit applied
// to the RedisCluster template (its hub file, which edit must change, and
// its v2 spoke, whose conversions name the hub's fields).
func editedTemplates(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := testkit.CopyTemplates(t)
	testkit.EditFile(t, filepath.Join(dir, "rediscluster", "rediscluster.cue"), edit)
	v2 := testkit.Read(t, dir, "rediscluster/v2.cue")
	testkit.Write(t, dir, map[string]string{"rediscluster/v2.cue": edit(v2)}) // the spoke may not name what edit changes
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

// TestVetFindsCommittedCRDByName: the committed CRD is found by its
// metadata.name whatever its file is named (kubebuilder's
// config/crd/bases/<group>_<plural>.yaml, among other documents), and a
// rename against it is refused; a kind with no committed CRD under --crds
// is named in a warning.
func TestVetFindsCommittedCRDByName(t *testing.T) {
	crds := filepath.Join(t.TempDir(), "crd")
	if err := os.MkdirAll(filepath.Join(crds, "bases"), 0o755); err != nil {
		t.Fatal(err)
	}
	redis, err := os.ReadFile("../../crds/redisclusters.cache.example.com.yaml")
	if err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join(crds, "bases", "cache.example.com_redisclusters.yaml")
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n---\n" + string(redis)
	if err := os.WriteFile(committed, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "vet", "--templates", editedTemplates(t, renameReplicas), "--crds", crds, "--testdata", "../../testdata")
	for _, want := range []string{
		"RedisCluster.cache.example.com: breaking schema change refused: the CRD in " + committed + " serves the version it changes",
		"v1 spec.replicas -> spec.size: renamed",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vet: error %v, want %q", err, want)
		}
	}

	out, err := run(t, "vet", "--crds", crds, "--testdata", "../../testdata")
	if err != nil {
		t.Fatalf("vet of the templates as committed: %v\n%s", err, out)
	}
	want := "warn WebApp.apps.example.com: no committed CRD named webapps.apps.example.com in a YAML file under " + crds + ": its schema change is not checked"
	if !strings.Contains(out, want) {
		t.Errorf("vet does not warn of the kind with no committed CRD, want %q:\n%s", want, out)
	}
	if strings.Contains(out, "no committed CRD named redisclusters.cache.example.com") {
		t.Errorf("vet warns of RedisCluster, whose CRD is committed:\n%s", out)
	}
}

// TestVetRefusesUnreadableCommittedCRD: a committed CRD file that is not
// YAML (a merge left conflict markers in it) is an error naming it, not a
// file with no CRD in it that would let the schema change through; a
// document that is YAML but no object (a JSON patch) is skipped.
func TestVetRefusesUnreadableCommittedCRD(t *testing.T) {
	crds := t.TempDir()
	redis, err := os.ReadFile("../../crds/redisclusters.cache.example.com.yaml")
	if err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join(crds, "redisclusters.cache.example.com.yaml")
	doc := "- op: add\n  path: /metadata/labels\n  value: {}\n---\n" + // YAML, not an object: skipped
		strings.Replace(string(redis), "\nspec:\n", "\nspec:\n<<<<<<< HEAD\n", 1)
	if err := os.WriteFile(committed, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "vet", "--templates", editedTemplates(t, renameReplicas), "--crds", crds, "--testdata", "../../testdata")
	want := committed + ": document 2 is not YAML"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("vet: error %v, want %q", err, want)
	}
}
