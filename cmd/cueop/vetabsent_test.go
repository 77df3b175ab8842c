package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetWarnsOfAbsentReads: a status field, a condition and ready that
// read fields no Deployment has are warned about with their CUE
// positions, though no golden case observes the Deployment; the kind still
// vets.
func TestVetWarnsOfAbsentReads(t *testing.T) {
	templates, cases := testkit.CopyTemplates(t), testkit.CopyDir(t, "../../testdata")
	testkit.Remove(t, cases, "webapp/migrated.txtar") // the case with an observed.yaml
	testkit.EditFile(t, filepath.Join(templates, "webapp", "webapp.cue"), func(src string) string {
		return strings.Replace(src, "*observed.deployment.status.availableReplicas | 0", "*observed.deployment.status.readyReplica | 0", 1) +
			`conditions: Scaled: {status: *(observed.deployment.spec.replica == parent.spec.replicas) | false, reason: "Scaled"}
_exposed: *(observed.service.status.loadBalancer.ingres != _|_) | false
ready: status.availableReplicas >= parent.spec.minAvailable && _exposed
`
	})
	if out, err := run(t, "--templates", templates, "test", "--testdata", cases, "--update"); err != nil {
		t.Fatalf("test --update: %v\n%s", err, out)
	}
	out, err := run(t, "--templates", templates, "vet", "--testdata", cases)
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	for _, want := range []string{
		"webapp.cue:173:22: status.availableReplicas reads observed.deployment.status.readyReplica, which Deployment apps/v1 does not have",
		"webapp.cue:175:32: conditions.Scaled reads observed.deployment.spec.replica, which Deployment apps/v1 does not have",
		"webapp.cue:176:13: ready reads observed.service.status.loadBalancer.ingres (through _exposed), which Service v1 does not have",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "readyReplica, which"); n != 1 {
		t.Errorf("the read of status.readyReplica is warned about %d times, want once:\n%s", n, out)
	}
}
