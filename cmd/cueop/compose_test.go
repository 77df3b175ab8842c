package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// writeTree writes files (path: content) below a new directory.
var writeTree = testkit.Dir

// testModule is the module.cue of the tests' module.
var testModule = testkit.Module

func TestVetRefusesUnreadableReference(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"cue.mod/module.cue": testModule,
		"app/app.cue": "package app\nresource: {group: \"apps.test.example\", version: \"v1\", kind: \"App\"}\n#Spec: {}\n" +
			"references: pw: {apiVersion: \"v1\", kind: \"Secret\", name: \"pw\"}\nchildren: {}\n",
	})
	_, err := run(t, "--templates", dir, "vet", "--testdata", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "app.cue:4:") ||
		!strings.Contains(err.Error(), "references.pw: kind Secret is not in the readable kinds (ConfigMap)") {
		t.Fatalf("vet: %v; want the reference refused with its position", err)
	}
	_, err = run(t, "--templates", dir, "--readable-kinds", "ConfigMap,Secret", "vet", "--testdata", t.TempDir())
	if err == nil || strings.Contains(err.Error(), "references.pw") {
		t.Fatalf("vet with Secrets readable: %v; want only the missing golden case", err)
	}
}

func TestVetRefusesWaveGap(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"cue.mod/module.cue": testModule,
		"app/app.cue": "package app\nresource: {group: \"apps.test.example\", version: \"v1\", kind: \"App\"}\n#Spec: {}\n" +
			"waves: {a: 0, b: 2}\nchildren: {\n" +
			"a: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: \"a\"}\n" +
			"b: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: \"b\"}\n}\n",
		"cases/app/c.txtar": "-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: x, namespace: ns}\nspec: {}\n-- children.yaml --\n",
	})
	_, err := run(t, "--templates", dir, "vet", "--testdata", filepath.Join(dir, "cases"))
	if err == nil || !strings.Contains(err.Error(), "waves: no child is in wave 1, below wave 2") {
		t.Fatalf("vet: %v; want the gap", err)
	}
}

func TestRenderReferenced(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"cr.yaml": "apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: shop, namespace: shop}\nspec: {settingsFrom: {name: s}}\n",
		"ref.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: shop}\ndata: {A: b}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: elsewhere}\ndata: {A: c}\n",
	})
	out, err := run(t, "--templates", "../../templates", "render", "-f", filepath.Join(dir, "cr.yaml"), "--referenced", filepath.Join(dir, "ref.yaml"))
	if err != nil || !strings.Contains(out, "apps.example.com/settings-checksum:") || !strings.Contains(out, "cueop.dev/wave: \"1\"") {
		t.Fatalf("render: %v\n%s", err, out)
	}
	_, err = run(t, "--templates", "../../templates", "render", "-f", filepath.Join(dir, "cr.yaml"))
	if err == nil || !strings.Contains(err.Error(), "references.settings: ConfigMap s not found in namespace shop") {
		t.Fatalf("render without the referenced object: %v", err)
	}
}

// TestRoleGrantsReadOnlyReadableKinds: the shared identity's one role
// reads every readable kind and writes none that is only readable.
func TestRoleGrantsReadOnlyReadableKinds(t *testing.T) {
	out := t.TempDir()
	if msg, err := run(t, "--templates", "../../templates", "--readable-kinds", "ConfigMap,Secret", "manifests", "--shared-identity", "--out-dir", out,
		"--testdata", "../../testdata", "--samples", "../../config/samples"); err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	rules := readRules(t, filepath.Join(out, "config/rbac/role.yaml"))
	requireGrants(t, rules, "", "secrets", "get", "list", "watch")
	for _, v := range []string{"create", "patch", "update", "delete"} {
		if grants(rules, "", "secrets", v) {
			t.Errorf("the role grants %s on Secrets, which templates may only read", v)
		}
	}
	requireGrants(t, rules, "apps.example.com", "webapps", "patch") // the ordered-deletion finalizer
	patch, err := os.ReadFile(filepath.Join(out, "config/manager/generated_patch.yaml"))
	if err != nil || !strings.Contains(string(patch), "value: ConfigMap,Secret") {
		t.Errorf("generated patch: %v\n%s", err, patch)
	}
}
