package golden_test

import (
	"testing"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/update"
)

// TestLifecycleTemplates runs the golden cases of the lifecycle policies'
// test kind (testdata/lifecycle): the policy annotations children carry and
// the policies a render refuses.
func TestLifecycleTemplates(t *testing.T) {
	set, err := template.Load("../../testdata/lifecycle/templates")
	if err != nil {
		t.Fatal(err)
	}
	results, err := golden.Run(set, "../../testdata/lifecycle/cases", *update.Golden, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 4 {
		t.Fatalf("found %d golden cases, want at least 4", len(results))
	}
	for _, r := range results {
		if r.Err != nil {
			t.Error(r.Err)
		}
	}
}
