package template_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

// modulesDir lays out a directory of modules as a registry source does:
// module "app" in app/, requiring example.com/lib@v0 v0.1.0, vendored in
// app/cue.mod/deps.
func modulesDir(t *testing.T) string {
	t.Helper()
	return testkit.Dir(t, map[string]string{
		template.ModulesFile:     `[{"dir": "app", "source": {"ref": "oci://r.test/test.example/app@v0.1.0", "module": "test.example/app@v0", "version": "v0.1.0", "digest": "sha256:aa"}}]`,
		"app/cue.mod/module.cue": testkit.ModuleFile("test.example/app@v0") + "deps: \"example.com/lib@v0\": v: \"v0.1.0\"\n",
		"app/web/web.cue":        strings.Replace(okKind, "package app\n", "package web\nimport \"example.com/lib\"\n", 1) + "children: cm: data: d: lib.greeting\n",
		"app/cue.mod/deps/example.com/lib@v0.1.0/cue.mod/module.cue": testkit.ModuleFile("example.com/lib@v0"),
		"app/cue.mod/deps/example.com/lib@v0.1.0/lib.cue":            "package lib\ngreeting: \"from lib\"\n",
	})
}

// TestLoadModulesDir: each module of a directory of modules loads with its
// vendored dependencies, and without a registry; its kinds are named
// <module dir>/<package>, carry the Source the directory names, and load
// again (as a render worker does) from the directory and from their Files.
func TestLoadModulesDir(t *testing.T) {
	asked := registry(t)
	root := modulesDir(t)
	set, err := template.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Kinds) != 1 || set.Kinds[0].Name != "app/web" {
		t.Fatalf("kinds = %v, want app/web", set.Kinds)
	}
	k := set.Kinds[0]
	if got, _ := k.Value.LookupPath(cue.ParsePath("children.cm.data.d")).String(); got != "from lib" {
		t.Errorf("children.cm.data.d = %q, want the dependency's value", got)
	}
	if k.Source.Digest != "sha256:aa" || k.Source.Version != "v0.1.0" {
		t.Errorf("Source = %+v", k.Source)
	}
	for _, f := range []string{"app/cue.mod/module.cue", "app/cue.mod/deps/example.com/lib@v0.1.0/lib.cue", "app/cue.mod/deps/example.com/lib@v0.1.0/cue.mod/module.cue"} {
		if _, ok := k.Files[f]; !ok {
			t.Errorf("Files lack %s: %v", f, keys(k.Files))
		}
	}
	again, err := template.LoadKind(k.Root(), k.Name, template.LoadOptions{})
	if err != nil || again.Revision != k.Revision || again.Name != k.Name {
		t.Errorf("LoadKind = %v, %v; want revision %s", again, err, k.Revision)
	}
	must(t, os.RemoveAll(root))
	fromFiles, err := template.LoadKindFiles(k.Root(), k.Name, k.Files, template.LoadOptions{})
	if err != nil || fromFiles.Revision != k.Revision || fromFiles.Name != k.Name {
		t.Errorf("LoadKindFiles = %v, %v; want revision %s", fromFiles, err, k.Revision)
	}
	if n := asked.Load(); n > 0 {
		t.Errorf("the registry was asked %d times", n)
	}
}

// TestLoadModulesDirLimits: a vendored dependency's files are read within
// the same limits as the module's own, and the error names the module.
func TestLoadModulesDirLimits(t *testing.T) {
	root := modulesDir(t)
	big := "package lib\ngreeting: \"from lib\"\n_pad: \"" + strings.Repeat("x", 2048) + "\"\n"
	must(t, os.WriteFile(filepath.Join(root, "app/cue.mod/deps/example.com/lib@v0.1.0/lib.cue"), []byte(big), 0o644))
	_, err := template.LoadWith(root, template.LoadOptions{Limits: template.Limits{MaxFileSize: 1024}})
	if err == nil || !strings.Contains(err.Error(), "module test.example/app@v0.1.0") || !strings.Contains(err.Error(), "lib.cue") {
		t.Errorf("LoadWith = %v, want the dependency's file refused, naming the module", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
