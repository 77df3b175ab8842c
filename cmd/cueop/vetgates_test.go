package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
)

// TestVetWarnsWhereGateNeverOpens: a readyWhen that reads a field no Pod
// has, and one that reads a child of a later wave through a hidden field,
// are warned about with their CUE positions; the kind still vets.
func TestVetWarnsWhereGateNeverOpens(t *testing.T) {
	templates := filepath.Join(t.TempDir(), "templates")
	if out, err := exec.Command("cp", "-r", "../../testdata/gates/templates", templates).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v: %s", err, out)
	}
	p := filepath.Join(templates, "gated", "gated.cue")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := string(src) + `_appUp: *(observed.app.status.phase == "Running") | false
readyWhen: {
	if _spec.worker != "" {worker: *(observed.worker.status.ready == true) | false}
	if _spec.consumer && _spec.worker != "" {gate: _appUp}
}
`
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--templates", templates, "vet", "--testdata", "../../testdata/gates/cases")
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	for _, want := range []string{
		"gated.cue:96:35: readyWhen.worker: reads observed.worker.status.ready: no Pod has that field, so worker is never ready: the gate never opens",
		"gated.cue:94:11: readyWhen.gate: reads observed.app.status.phase (through _appUp), a child of wave 1, which is applied only once gate (wave 0) is ready: the gate never opens",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
}

// TestGateRulesGrantStorageClasses: the operator's role may get
// StorageClasses exactly when a template renders PersistentVolumeClaims (a
// wave gate reads a Pending claim's class).
func TestGateRulesGrantStorageClasses(t *testing.T) {
	if r := gateRules(render.MustKindSet("ConfigMap")); r != nil {
		t.Errorf("rules without claims: %v", r)
	}
	r := gateRules(render.MustKindSet("ConfigMap,PersistentVolumeClaim"))
	if len(r) != 1 || r[0].APIGroups[0] != "storage.k8s.io" || r[0].Resources[0] != "storageclasses" || strings.Join(r[0].Verbs, ",") != "get" {
		t.Errorf("rules with claims: %v, want get on storage.k8s.io storageclasses", r)
	}
}
