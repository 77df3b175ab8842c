package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/internal/testkit"
)

// run runs cueop with args from the repository root's point of view.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"--templates", "../../templates"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestRenderSample(t *testing.T) {
	out, err := run(t, "render", "-f", "../../config/samples/cache_v1_rediscluster.yaml", "--status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# pod-0\n", "kind: Pod", "name: sample-2", "image: redis:7.0", "# service\n", "kind: Service", "# status\n", "phase: Pending"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
}

// TestRenderSampleAtV2: a CR given at the spoke v2 renders as its hub form
// does: size 2 is two Pods of redis:7.2.
func TestRenderSampleAtV2(t *testing.T) {
	out, err := run(t, "render", "-f", "../../config/samples/cache_v2_rediscluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: sample-v2-1", "image: redis:7.2"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sample-v2-2") {
		t.Errorf("render output has a third Pod:\n%s", out)
	}
}

func TestRenderBadInput(t *testing.T) {
	dir := testkit.Dir(t, map[string]string{
		"bad.yaml":     "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: x}\nspec: {replicas: 0}\n",
		"unknown.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"garbage.yaml": ": : :\n\t- [",
	})
	bad, unknown, garbage := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "unknown.yaml"), filepath.Join(dir, "garbage.yaml")
	for file, want := range map[string]string{
		bad:                                "spec.replicas: invalid value 0 (out of bound >=1)",
		unknown:                            "no template serves /v1, Kind=ConfigMap",
		garbage:                            "garbage.yaml: document 1: yaml: did not find expected key",
		filepath.Join(dir, "missing.yaml"): "no such file",
	} {
		_, err := run(t, "render", "-f", file)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("render %s: error %v, want %q", filepath.Base(file), err, want)
		}
	}
}

func TestVetAndTest(t *testing.T) {
	if out, err := run(t, "vet", "--testdata", "../../testdata"); err != nil || !strings.Contains(out, "ok   rediscluster") {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	out, err := run(t, "test", "--testdata", "../../testdata")
	if err != nil || !strings.Contains(out, "ok   ../../testdata/rediscluster/defaults.txtar") {
		t.Fatalf("test: %v\n%s", err, out)
	}
}

func TestTestReportsMismatch(t *testing.T) {
	dir := testkit.Dir(t, map[string]string{"rediscluster/wrong.txtar": "-- parent.yaml --\napiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: x}\nspec: {replicas: 1}\n-- status.yaml --\nready: true\n"})
	out, err := run(t, "test", "--testdata", dir)
	if err == nil || !strings.Contains(out, "status.yaml differs") || !strings.Contains(out, "- ready: true") || !strings.Contains(out, "+ ready: false") {
		t.Fatalf("test: err=%v\n%s", err, out)
	}
}

func TestVetCatchesSchemaErrors(t *testing.T) {
	tmpl := tTemplates(t, "app/app.cue", `package app
resource: {group: "t.example.com", version: "v1", kind: "App"}
#Spec: {}
parent: metadata: name: string
children: svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name, spec: prots: [{port: 80}]}
`)
	data := appTestdata(t)
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--templates", tmpl, "vet", "--testdata", data})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "children.svc") || !strings.Contains(err.Error(), "prots") {
		t.Fatalf("vet: %v, want the misspelt field spec.prots of children.svc", err)
	}
}

// TestVetCatchesBoundsOverBudget: a schema that accepts a spec rendering
// more children than the budget fails vet, naming the field and its bound.
func TestVetCatchesBoundsOverBudget(t *testing.T) {
	tmpl := tTemplates(t)
	src := `package fleet
import "list"
resource: {group: "t.example.com", version: "v1", kind: "Fleet"}
#Spec: {size: *1 | int & >=1 & <=MAX, nested: {weight: *1 | int & <=3}}
parent: {metadata: name: string, spec: #Spec}
children: {for i in list.Range(0, parent.spec.size, 1) {"cm-\(i)": {apiVersion: "v1", kind: "ConfigMap", metadata: name: "\(parent.metadata.name)-\(i)"}}}
`
	data := testkit.NamedDir(t, "testdata", map[string]string{"fleet/a.txtar": "-- parent.yaml --\napiVersion: t.example.com/v1\nkind: Fleet\nmetadata: {name: a}\nspec: {size: 2}\n"})
	vet := func(max string) error {
		testkit.Write(t, tmpl, map[string]string{"fleet/fleet.cue": strings.Replace(src, "MAX", max, 1)})
		root := newRoot()
		root.SetOut(&bytes.Buffer{})
		root.SetArgs([]string{"--templates", tmpl, "vet", "--testdata", data})
		return root.Execute()
	}
	if err := vet("400"); err != nil {
		t.Fatalf("vet with size <= 400 (within the budget of 500): %v", err)
	}
	err := vet("1000")
	if err == nil || !strings.Contains(err.Error(), "#Spec accepts spec.size at <=1000, which renders beyond the render budget") || !strings.Contains(err.Error(), "render budget of 500") {
		t.Fatalf("vet with size <= 1000: %v, want the bound named and the budget", err)
	}
	t.Log(err)
}

func TestVersion(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"version"}) // it takes no template flag
	if err := root.Execute(); err != nil || !strings.HasPrefix(out.String(), "cueop ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
}

// TestMain lets the test binary serve as the render worker of the
// operators its tests run (cueop dev, cueop run) and as vet's trial
// process (vettrial.go), as main does.
func TestMain(m *testing.M) {
	worker.Main()
	trialMain()
	os.Exit(m.Run())
}

// tTemplates is a templates directory of the module t.example/t@v0 holding
// the files of pairs (path, content, path, content...).
func tTemplates(t *testing.T, pairs ...string) string {
	t.Helper()
	files := map[string]string{"cue.mod/module.cue": testkit.ModuleFile("t.example/t@v0")}
	for i := 0; i+1 < len(pairs); i += 2 {
		files[pairs[i]] = pairs[i+1]
	}
	return testkit.Templates(t, files)
}

// appTestdata is a testdata directory with one case of an App of
// t.example.com.
func appTestdata(t *testing.T) string {
	t.Helper()
	return testkit.NamedDir(t, "testdata", map[string]string{"app/a.txtar": "-- parent.yaml --\napiVersion: t.example.com/v1\nkind: App\nmetadata: {name: a}\nspec: {}\n"})
}
