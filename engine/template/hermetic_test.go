package template_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

const embedKind = `@extern(embed)
package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: d: _data}
`

// outside makes a directory outside any templates directory holding a
// secret, and returns it.
func outside(t *testing.T) string {
	t.Helper()
	return testkit.Dir(t, map[string]string{"secret.txt": "s3cret", "evil.cue": "package app\n_data: \"evil\"\n"})
}

var must = testkit.Must

// TestLoadRefusesSymlinksOut: no file a template reads may resolve outside
// the templates directory, whichever way it is reached.
func TestLoadRefusesSymlinksOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		embed string
		link  func(t *testing.T, dir, out string) // makes the links in the package dir
		want  []string
	}{{
		name:  "embed file through a linked directory",
		embed: `_data: _ @embed(file="linkdir/secret.txt", type=text)`,
		link: func(t *testing.T, dir, out string) {
			must(t, os.Symlink(out, filepath.Join(dir, "linkdir")))
		},
		want: []string{"app/linkdir/secret.txt: symlink ", "app/linkdir -> ", "leads out of the templates directory", "app/app.cue:7:10: @embed"},
	}, {
		name:  "embed glob through a linked directory",
		embed: `_files: _ @embed(glob="linkdir/*.txt", type=text, allowEmptyGlob)` + "\n" + `_data: "\(len(_files))"`,
		link: func(t *testing.T, dir, out string) {
			must(t, os.Symlink(out, filepath.Join(dir, "linkdir")))
		},
		want: []string{"app/linkdir: symlink ", "-> " + "OUT", "leads out of the templates directory"},
	}, {
		name:  "embed a linked file",
		embed: `_data: _ @embed(file="secret.txt", type=text)`,
		link: func(t *testing.T, dir, out string) {
			must(t, os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(dir, "secret.txt")))
		},
		want: []string{"app/secret.txt: symlink ", "app/secret.txt -> OUT/secret.txt", "leads out"},
	}, {
		name:  "a package file linked from outside",
		embed: `_data: string`,
		link: func(t *testing.T, dir, out string) {
			must(t, os.Symlink(filepath.Join(out, "evil.cue"), filepath.Join(dir, "evil.cue")))
		},
		want: []string{"app/evil.cue: symlink ", "app/evil.cue -> OUT/evil.cue", "leads out"},
	}, {
		name:  "a relative link climbing out",
		embed: `_data: _ @embed(file="up/secret.txt", type=text)`,
		link: func(t *testing.T, dir, out string) {
			rel, err := filepath.Rel(dir, out)
			must(t, err)
			must(t, os.Symlink(rel, filepath.Join(dir, "up")))
		},
		want: []string{"app/up/secret.txt: symlink ", "app/up -> ../", "leads out"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := outside(t)
			dir := writeTemplates(t, map[string]string{"app/app.cue": embedKind + tc.embed + "\n"})
			tc.link(t, filepath.Join(dir, "app"), out)
			set, err := template.Load(dir)
			if err == nil {
				t.Fatalf("loaded %d kinds, want a refusal", len(set.Kinds))
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, "evil\"") {
				t.Errorf("error leaks the outside file: %s", msg)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "OUT", out); !strings.Contains(msg, w) {
					t.Errorf("error does not say %q:\n%s", w, msg)
				}
			}
		})
	}
}

// TestLoadFollowsLinksInside: links that stay inside the directory work,
// among them a ConfigMap volume's layout inside a package directory
// (..data -> ..timestamp, file -> ..data/file).
func TestLoadFollowsLinksInside(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		"shared/conf.txt":           "shared",
		"app/..2026_11_30/main.cue": embedKind + `_data: _ @embed(file="conf.txt", type=text)` + "\n",
	})
	pkg := filepath.Join(dir, "app")
	must(t, os.Symlink("..2026_11_30", filepath.Join(pkg, "..data")))
	must(t, os.Symlink("..data/main.cue", filepath.Join(pkg, "main.cue")))
	must(t, os.Symlink("../shared/conf.txt", filepath.Join(pkg, "conf.txt")))
	set, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := set.Kinds[0].Value.LookupPath(template.PathChildren).LookupPath(cue.ParsePath("cm.data.d")).String()
	if got != "shared" {
		t.Errorf("embedded %q, want %q", got, "shared")
	}
	// The templates directory itself named through a symlink.
	link := filepath.Join(t.TempDir(), "templates")
	must(t, os.Symlink(dir, link))
	if _, err := template.Load(link); err != nil {
		t.Errorf("Load through a linked directory: %v", err)
	}
}

// TestLoadRefusesModuleDeps: a module with dependencies would be fetched
// from a registry; it is refused, saying why, and no registry is asked.
func TestLoadRefusesModuleDeps(t *testing.T) {
	asked := registry(t)
	dir := writeTemplates(t, map[string]string{"app/app.cue": okKind})
	testkit.Write(t, dir, map[string]string{"cue.mod/module.cue": testkit.Module + "deps: \"example.com/lib@v0\": v: \"v0.1.0\"\n"})
	_, err := template.Load(dir)
	if err == nil || !strings.Contains(err.Error(), `deps example.com/lib@v0 refused: templates are loaded hermetically`) ||
		!strings.Contains(err.Error(), "cue.mod/module.cue") {
		t.Errorf("Load = %v, want deps refused naming cue.mod/module.cue", err)
	}
	if n := asked.Load(); n > 0 {
		t.Errorf("the registry was asked %d times", n)
	}
}

// TestLoadImportsNoRegistry: an import of a module that is not there fails
// without asking a registry.
func TestLoadImportsNoRegistry(t *testing.T) {
	asked := registry(t)
	dir := writeTemplates(t, map[string]string{"app/app.cue": strings.Replace(okKind, "package app\n",
		"package app\nimport \"example.com/lib@v0:lib\"\n_x: lib.x\n", 1)})
	_, err := template.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "app/app.cue") {
		t.Errorf("Load = %v, want an import error naming app/app.cue", err)
	}
	if n := asked.Load(); n > 0 {
		t.Errorf("the registry was asked %d times", n)
	}
}

// registry points CUE_REGISTRY at a listener that counts connections.
func registry(t *testing.T) *atomic.Int64 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Setenv("CUE_REGISTRY", "http://"+l.Addr().String())
	t.Setenv("CUE_CACHE_DIR", t.TempDir())
	return &n
}

// TestRevisionIgnoresEditorFiles: swap and backup files and files no kind
// reads are no template change; an embedded file is.
func TestRevisionIgnoresEditorFiles(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		"app/app.cue":  embedKind + `_data: _ @embed(file="conf.txt", type=text)` + "\n",
		"app/conf.txt": "one",
	})
	rev := func() string {
		t.Helper()
		set, err := template.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return set.Kinds[0].Revision
	}
	before := rev()
	for _, name := range []string{".app.cue.swp", "app.cue~", ".#app.cue", "#app.cue#", "notes.md"} {
		must(t, os.WriteFile(filepath.Join(dir, "app", name), []byte("junk "+name), 0o644))
		if got := rev(); got != before {
			t.Errorf("writing app/%s changed the revision %s to %s", name, before, got)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "app", "conf.txt"), []byte("two"), 0o644))
	if got := rev(); got == before {
		t.Errorf("editing the embedded app/conf.txt kept the revision %s", got)
	}
	for _, name := range []string{".app.cue.swp", "app.cue~", ".#app.cue", "#app.cue#", "dir/x.swo"} {
		if !template.IsEditorFile(name) {
			t.Errorf("IsEditorFile(%q) = false", name)
		}
	}
	for _, name := range []string{"app.cue", "a#b.cue", "#", "conf.yaml"} {
		if template.IsEditorFile(name) {
			t.Errorf("IsEditorFile(%q) = true", name)
		}
	}
}
