package golden_test

import (
	"testing"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/update"
)

// TestTemplates runs the golden cases of the project's own templates: the
// same code as `cueop test`, and `go test ./... -update` rewrites them.
func TestTemplates(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	results, err := golden.Run(set, "../../testdata", *update.Golden, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 10 {
		t.Fatalf("found %d golden cases, want at least 10", len(results))
	}
	for _, r := range results {
		if r.Err != nil {
			t.Error(r.Err)
		}
		if r.Updated {
			t.Logf("updated %s", r.Case)
		}
	}
}
