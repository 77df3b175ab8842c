package main

import (
	"strings"
	"testing"
)

// TestVetReportsObservedPaths: `cueop vet` says, per kind, which paths of
// the observed children the template reads.
func TestVetReportsObservedPaths(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"observed     [*].status.conditions\n",
		"parent       metadata.name, spec\n",
		"observed     deployment.status.availableReplicas\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "whole object") {
		t.Errorf("the project's kinds read no whole object:\n%s", out)
	}
}
