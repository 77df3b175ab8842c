package golden_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/internal/update"
)

// TestTemplates runs the golden cases of the project's own templates: the
// same code as `cueop test`, and `go test ./... -update` rewrites them.
func TestTemplates(t *testing.T) {
	for _, err := range runCases(t, "../../templates", "../../testdata", 10, *update.Golden) {
		t.Error(err)
	}
}

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
		if r.Updated {
			t.Logf("updated %s", r.Case)
		}
	}
	return errs
}

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

// TestConvertedCaseFailsOnAWrongForm: a conversion case whose expected
// form differs from the conversion fails with the diff.
func TestConvertedCaseFailsOnAWrongForm(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	wrong := strings.Replace(testkit.Read(t, "../../testdata", "rediscluster/convert-v1-to-v2.txtar"), "  size: 5", "  size: 4", 1)
	dir := testkit.Dir(t, map[string]string{"rediscluster/c.txtar": wrong})
	results, err := golden.Run(set, dir, false, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Err == nil || !strings.Contains(results[0].Err.Error(), "converted.yaml differs") ||
		!strings.Contains(results[0].Err.Error(), "+   size: 5") {
		t.Errorf("results = %+v, want converted.yaml to differ at size", results)
	}
}

// TestToHubOfADroppedVersion: a parent at a version its kind no longer
// serves, the kind serving one version (a sample left at v1 once v1 is
// dropped), is an error naming the version, not a crash (cueop dev
// computes the kinds' rights from the samples on every edit).
func TestToHubOfADroppedVersion(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	for _, k := range set.Kinds {
		if len(k.Versions) > 1 {
			continue
		}
		parent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.Resource.Group + "/v0dropped", "kind": k.Resource.Kind,
			"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{},
		}}
		_, err := golden.ToHub(k, parent)
		if err == nil || !strings.Contains(err.Error(), `version "v0dropped" is not served (served: `+k.Resource.Version+`)`) {
			t.Errorf("ToHub(%s at v0dropped) = %v, want the version not served", k.Name, err)
		}
		return
	}
	t.Fatal("no kind of one version in templates/")
}
