package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestVetConditionalReferences: a reference declared in a top-level if is
// read for the golden case whose spec makes it exist (its data copied, as
// the case expects), and a top-level field whose name is computed, which
// cueop cannot tell from a `references`, is warned of with its position.
func TestVetConditionalReferences(t *testing.T) {
	templates := testkit.CopyDir(t, "../../testdata/gates/templates")
	testkit.EditFile(t, filepath.Join(templates, "reader", "reader.cue"), func(src string) string {
		old := `references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.spec.settings}`
		if !strings.Contains(src, old) {
			t.Fatal("reader.cue: no references to edit")
		}
		return strings.Replace(src, old, `if parent.spec.settings != _|_ {
	if true {
		references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.spec.settings}
	}
}
if parent.spec.settings != _|_ {
	("_" + parent.spec.settings): true
}`, 1)
	})
	out, err := run(t, "--templates", templates, "vet", "--testdata", "../../testdata/gates/cases")
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	want := "reader.cue:25:2: a top-level field whose name is computed: cueop cannot tell whether it declares references"
	if !strings.Contains(out, want) || !strings.Contains(out, "warn kind reader: ") {
		t.Errorf("vet output lacks %q:\n%s", want, out)
	}
}
