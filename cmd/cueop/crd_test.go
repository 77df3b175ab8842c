package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template/templatetest"
	_ "github.com/cueop/cueop/internal/update"
)

// TestCRDsUpToDate fails when crds/ is not what `make crds` writes now.
func TestCRDsUpToDate(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	crds, err := generateCRDs(set)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../crds/*.yaml")
	if len(files) != len(crds) {
		t.Errorf("crds/ has %d files, the templates have %d kinds: run make crds", len(files), len(crds))
	}
	for _, crd := range crds {
		want, err := crdgen.YAML(crd)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("../../crds", crd.Name+".yaml"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("crds/%s.yaml is stale (%v): run make crds", crd.Name, err)
		}
	}
}
