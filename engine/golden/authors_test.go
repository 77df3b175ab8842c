package golden_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/internal/update"
)

// TestAuthorsTemplates runs the golden cases of the Blog test kind
// (testdata/authors): wave 1 held back while the migration Job runs
// (held.txt), the Blog's own conditions in status.yaml, and errors matched
// by field path and message at any line of blog.cue.
func TestAuthorsTemplates(t *testing.T) {
	for _, err := range runCases(t, "../../testdata/authors/templates", "../../testdata/authors/cases", 5, *update.Golden) {
		t.Error(err)
	}
}

// TestErrorAtAnyLine: a line added above #Spec moves every position; a
// case written `blog.cue:*` still passes, and update leaves it as it is,
// while a case with an exact position fails, as by default.
func TestErrorAtAnyLine(t *testing.T) {
	templates, cases := testkit.CopyDir(t, "../../testdata/authors/templates"), testkit.CopyDir(t, "../../testdata/authors/cases")
	testkit.EditFile(t, filepath.Join(templates, "blog/blog.cue"), testkit.Replace("// #Spec is", "// A line added above #Spec.\n\n// #Spec is"))
	exact := filepath.Join(cases, "blog/exact.txtar")
	wildcard := filepath.Join(cases, "blog/missing-settings-name.txtar")
	before, _ := os.ReadFile(wildcard)
	caseText := strings.Replace(string(before), "blog.cue:*)", "blog.cue:30:18)", 1)
	testkit.Write(t, cases, map[string]string{"blog/exact.txtar": caseText})
	errs := runCases(t, templates, cases, 6, false)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "exact.txtar: error.txt differs") || !strings.Contains(errs[0].Error(), "blog.cue:30:18") {
		t.Errorf("errors %v, want only exact.txtar's (its position moved)", errs)
	}
	if errs := runCases(t, templates, cases, 6, true); len(errs) > 0 {
		t.Fatal(errs)
	}
	if after, _ := os.ReadFile(wildcard); string(after) != string(before) {
		t.Errorf("update rewrote a case that matches:\n%s", after)
	}
	if after, _ := os.ReadFile(exact); !strings.Contains(string(after), "blog.cue:32:18") {
		t.Errorf("update left the exact position:\n%s", after)
	}
}

// TestHeldSectionRequired: a case whose children.yaml no longer lists
// children held back behind a wave must say so in held.txt.
func TestHeldSectionRequired(t *testing.T) {
	cases := testkit.CopyDir(t, "../../testdata/authors/cases")
	testkit.EditFile(t, filepath.Join(cases, "blog/job-running.txtar"), func(src string) string {
		return src[:strings.Index(src, "-- held.txt --")] + src[strings.Index(src, "-- status.yaml --"):]
	})
	errs := runCases(t, "../../testdata/authors/templates", cases, 5, false)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "children are held back behind a wave: held.txt expected") {
		t.Errorf("errors %v, want job-running.txtar's missing held.txt", errs)
	}
}
