package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetComparesGoldenCases: vet passes on the project's golden cases and
// says so, and fails, naming the case and the section, when a case's
// expected children.yaml is not what the template renders.
func TestVetComparesGoldenCases(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata")
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	if !strings.Contains(out, "golden cases in ../../testdata match their expected sections") {
		t.Errorf("vet does not say it compared the golden cases:\n%s", out)
	}
	testdata := testkit.CopyDir(t, "../../testdata")
	path := filepath.Join(testdata, "staticsite", "defaults.txtar")
	testkit.EditFile(t, path, testkit.Replace("  replicas: 2\n", "  replicas: 7\n")) // fails if it has no replicas: 2 to change
	out, err = run(t, "vet", "--testdata", testdata)
	if err == nil {
		t.Fatalf("vet passed a golden case whose children.yaml is wrong:\n%s", out)
	}
	for _, want := range []string{"1 of ", "golden cases differ", path + ": children.yaml differs", "-   replicas: 7", "+   replicas: 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("vet error lacks %q: %v", want, err)
		}
	}
}
