package golden_test

import (
	"testing"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/update"
)

// TestLifecycleTemplates runs the golden cases of the lifecycle policies'
// test kind (testdata/lifecycle): the policy annotations children carry and
// the policies a render refuses.
func TestLifecycleTemplates(t *testing.T) {
	for _, err := range runCases(t, "../../testdata/lifecycle/templates", "../../testdata/lifecycle/cases", 4, *update.Golden) {
		t.Error(err)
	}
}

// runCases runs the golden cases of dir for the kinds of templates, at
// least min of them, and returns the errors of those that fail.
func runCases(t *testing.T, templates, dir string, min int, update bool) []error {
	t.Helper()
	set := templatetest.Load(t, templates)
	results, err := golden.Run(set, dir, update, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < min {
		t.Fatalf("found %d golden cases in %s, want at least %d", len(results), dir, min)
	}
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errs
}
