package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/internal/testkit"
)

var hostileModule = testkit.Module

// hostileKind is a kind "app" with the given CUE after its contract
// header, and children from data.
func hostileKind(extra string) string {
	return `@extern(embed)
package app
import "list"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {size: *1 | int & >=0 & <=30}
parent: spec: #Spec
_l: list.Range(0, 1, 1)
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: d: _data}
` + extra + "\n"
}

// writeHostile writes a templates module and a golden case, returning the
// templates and testdata directories.
func writeHostile(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	all := map[string]string{
		"templates/cue.mod/module.cue": hostileModule,
		"testdata/app/ok.txtar":        "-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: {size: 1}\n",
		"cr.yaml":                      "apiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: {size: 1}\n",
	}
	for k, v := range files {
		all[k] = v
	}
	dir := testkit.Dir(t, all)
	return filepath.Join(dir, "templates"), filepath.Join(dir, "testdata")
}

// runIn runs cueop on templates dir with args.
func runIn(dir string, args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"--templates", dir}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestHostileTemplatesOffline: every offline command refuses a template
// that reads outside its directory, needs a registry or does not compile
// within its budget, as the operator does when it loads them.
func TestHostileTemplatesOffline(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secret, "passwd"), []byte("root:x:0:0"), 0o644)
	for _, tc := range []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, templates string)
		flags []string
		want  string
	}{{
		name:  "embed through a symlink out",
		files: map[string]string{"templates/app/app.cue": hostileKind(`_data: _ @embed(file="linkdir/passwd", type=text)`)},
		setup: func(t *testing.T, templates string) {
			if err := os.Symlink(secret, filepath.Join(templates, "app", "linkdir")); err != nil {
				t.Fatal(err)
			}
		},
		want: "app/linkdir -> " + secret + " leads out of the templates directory",
	}, {
		name:  "glob through a symlink out",
		files: map[string]string{"templates/app/app.cue": hostileKind(`_f: _ @embed(glob="linkdir/*", type=text)` + "\n" + `_data: "\(len(_f))"`)},
		setup: func(t *testing.T, templates string) {
			if err := os.Symlink(secret, filepath.Join(templates, "app", "linkdir")); err != nil {
				t.Fatal(err)
			}
		},
		want: "leads out of the templates directory",
	}, {
		name: "module deps",
		files: map[string]string{
			"templates/app/app.cue":        hostileKind(`_data: "x"`),
			"templates/cue.mod/module.cue": hostileModule + "deps: \"example.com/lib@v0\": v: \"v0.1.0\"\n",
		},
		want: "deps example.com/lib@v0 refused: templates are loaded hermetically",
	}, {
		name:  "compile out of budget",
		files: map[string]string{"templates/app/app.cue": hostileKind(`_cells: [for i in list.Range(0, 20, 1) for j in list.Range(0, 20, 1) for k in list.Range(0, 20, 1) {i*j*k}]` + "\n" + `_data: "\(len(_cells))"`)},
		flags: []string{"--render-cpu", "10ms", "--render-max-abandoned", "10"},
		want:  "package app: evaluation budget exceeded",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			templates, testdata := writeHostile(t, tc.files)
			if tc.setup != nil {
				tc.setup(t, templates)
			}
			cr := filepath.Join(filepath.Dir(templates), "cr.yaml")
			for _, args := range [][]string{
				{"render", "-f", cr}, {"vet", "--testdata", testdata}, {"test", "--testdata", testdata}, {"crd"},
			} {
				out, err := runIn(templates, append(tc.flags, args...)...)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("cueop %s: %v, want %q", args[0], err, tc.want)
				}
				if strings.Contains(out, "root:x") || strings.Contains(err.Error(), "root:x") {
					t.Errorf("cueop %s shows the file outside", args[0])
				}
			}
		})
	}
	waitAbandoned(t, "compile app")
}

// TestVetRefusesBoundsOverBudget: a schema whose bounds let a CR's render
// run out of budget is refused by vet, which names the bounds and where
// the template grows; render says the same of such a CR.
func TestVetRefusesBoundsOverBudget(t *testing.T) {
	templates, testdata := writeHostile(t, map[string]string{
		"templates/app/app.cue": hostileKind(`_cells: [for i in list.Range(0, parent.spec.size, 1) for j in list.Range(0, parent.spec.size, 1) for k in list.Range(0, parent.spec.size, 1) {i*j*k}]` + "\n" + `_data: "\(len(_cells))"`),
		"big.yaml":              "apiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: {size: 30}\n",
	})
	start := time.Now()
	_, err := runIn(templates, "--render-cpu", "50ms", "vet", "--testdata", testdata)
	if err == nil || !strings.Contains(err.Error(), "#Spec accepts spec.size at <=30, which renders beyond the render budget") ||
		!strings.Contains(err.Error(), "app/app.cue:9:10 comprehension (3 nested for)") {
		t.Errorf("vet: %v", err)
	}
	_, err = runIn(templates, "--render-cpu", "50ms", "render", "-f", filepath.Join(filepath.Dir(templates), "big.yaml"))
	if err == nil || !strings.Contains(err.Error(), "render evaluation budget exceeded") {
		t.Errorf("render: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("vet and render took %s", d)
	}
	waitAbandoned(t, "app")
}

// TestVetWarnsOfLongNames: vet renders each kind with a CR name of the most
// the API server allows, and warns when children would be refused.
func TestVetWarnsOfLongNames(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`warn kind rediscluster: CR names of up to 63 characters render, though the API server allows 253: with 64, `,
		`must be no more than 63 bytes`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
}

func waitAbandoned(t *testing.T, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	budget.WaitAbandoned(ctx, key, 0)
}

// TestManifestsLeaveEditorFilesOut: the templates ConfigMap holds no
// editor swap or backup file.
func TestManifestsLeaveEditorFilesOut(t *testing.T) {
	templates, _ := writeHostile(t, map[string]string{
		"templates/app/app.cue":      hostileKind(`_data: "x"`),
		"templates/app/.app.cue.swp": "swap",
		"templates/app/app.cue~":     "backup",
	})
	files, err := templateFiles(templates)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	if got := strings.Join(paths, " "); got != "app/app.cue cue.mod/module.cue" {
		t.Errorf("files = %s, want app/app.cue cue.mod/module.cue", got)
	}
}
