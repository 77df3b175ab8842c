package golden_test

import (
	"path/filepath"
	"testing"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// TestCasesPassFromAnyDirectory runs the project's golden cases, whose
// error.txt sections were written from the repository root, from the
// templates directory, from a package directory within it and from a
// directory outside the repository: positions in error.txt are relative to
// the templates directory, whatever the working directory.
func TestCasesPassFromAnyDirectory(t *testing.T) {
	root, err := filepath.Abs("../../templates")
	if err != nil {
		t.Fatal(err)
	}
	testdata, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, filepath.Join(root, "rediscluster"), t.TempDir()} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Chdir(dir)
			rel, err := filepath.Rel(dir, root)
			if err != nil {
				t.Fatal(err)
			}
			set := templatetest.Load(t, rel)
			results, err := golden.Run(set, testdata, false, render.Options{})
			if err != nil {
				t.Fatal(err)
			}
			errorCases := 0
			for _, r := range results {
				if r.Err != nil {
					t.Error(r.Err)
				}
				if filepath.Base(r.Case) == "bad-version.txtar" || filepath.Base(r.Case) == "bad-service-type.txtar" {
					errorCases++
				}
			}
			if errorCases != 2 {
				t.Errorf("ran %d of the error cases bad-version and bad-service-type, want 2", errorCases)
			}
		})
	}
}

// TestRelative rewrites positions however they are spelled.
func TestRelative(t *testing.T) {
	root := t.TempDir()
	t.Chdir(filepath.Join(root))
	for _, msg := range []string{
		"spec.x: bad (template " + filepath.Join(root, "k", "k.cue") + ":3:4)",
		"spec.x: bad (template k/k.cue:3:4)",
	} {
		if got, want := golden.Relative(root, msg), "spec.x: bad (template templates/k/k.cue:3:4)"; got != want {
			t.Errorf("Relative(%q) = %q, want %q", msg, got, want)
		}
	}
	if got, want := golden.Relative(root, "app.kubernetes.io/name: x.cue is not a position"), "app.kubernetes.io/name: x.cue is not a position"; got != want {
		t.Errorf("Relative rewrote %q", got)
	}
}
