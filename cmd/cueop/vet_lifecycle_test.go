package main

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetChecksPolicies runs vet on the lifecycle test kind: its cases pass,
// and a case whose policies the render refuses (recreate on a
// PersistentVolumeClaim) fails vet with the template position.
func TestVetChecksPolicies(t *testing.T) {
	const templates = "../../testdata/lifecycle/templates"
	if out, err := run(t, "--templates", templates, "vet", "--testdata", "../../testdata/lifecycle/cases"); err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	cases := testkit.Dir(t, map[string]string{"keeper/recreate-pvc.txtar": "-- parent.yaml --\napiVersion: lifecycle.example.com/v1\nkind: Keeper\nmetadata: {name: k, namespace: ns}\n" +
		"spec: {storageClass: standard, recreateData: true}\n-- children.yaml --\n"})
	_, err := run(t, "--templates", templates, "vet", "--testdata", cases)
	if err == nil || !strings.Contains(err.Error(), "policies.data: recreate: a PersistentVolumeClaim is never recreated") ||
		!strings.Contains(err.Error(), "keeper.cue:") {
		t.Fatalf("vet: %v; want the refused policy with its position", err)
	}
}
