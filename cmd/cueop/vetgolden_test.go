package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	testdata := filepath.Join(t.TempDir(), "testdata")
	if err := os.CopyFS(testdata, os.DirFS("../../testdata")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testdata, "staticsite", "defaults.txtar")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(data), "  replicas: 2\n", "  replicas: 7\n", 1)
	if wrong == string(data) {
		t.Fatal("defaults.txtar has no replicas: 2 to change")
	}
	if err := os.WriteFile(path, []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
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
