package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetWarnsWhereGateNeverOpens: a readyWhen that reads a field no Pod
// has, and one that reads a child of a later wave through a hidden field,
// are warned about with their CUE positions; the kind still vets.
func TestVetWarnsWhereGateNeverOpens(t *testing.T) {
	templates := testkit.CopyDir(t, "../../testdata/gates/templates")
	testkit.EditFile(t, filepath.Join(templates, "gated", "gated.cue"), func(src string) string {
		return src + `_appUp: *(observed.app.status.phase == "Running") | false
readyWhen: {
	if _spec.worker != "" {worker: *(observed.worker.status.ready == true) | false}
	if _spec.consumer && _spec.worker != "" {gate: _appUp}
}
`
	})
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
