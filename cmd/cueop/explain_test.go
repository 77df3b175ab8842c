package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainListsAdmissionAndRenderOnly: `cueop vet` and `cueop crd
// --explain` say, per kind, which constraints of #Spec the CRD enforces
// with a CEL rule and which stay render-only, and why.
func TestExplainListsAdmissionAndRenderOnly(t *testing.T) {
	out, err := run(t, "crd", "--explain")
	if err != nil {
		t.Fatal(err)
	}
	want := "admission    spec.minReady <= spec.replicas ("
	if !strings.Contains(out, want) || !strings.Contains(out, "rediscluster.cue:36:25): CEL rule on spec: ") {
		t.Errorf("crd --explain lacks %q at rediscluster.cue:36:25:\n%s", want, out)
	}

	tmpl := filepath.Join(t.TempDir(), "templates")
	os.MkdirAll(filepath.Join(tmpl, "cue.mod"), 0o755)
	os.MkdirAll(filepath.Join(tmpl, "app"), 0o755)
	os.WriteFile(filepath.Join(tmpl, "cue.mod", "module.cue"), []byte("module: \"t.example/t@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	os.WriteFile(filepath.Join(tmpl, "app", "app.cue"), []byte(`package app
import "list"
resource: {group: "t.example.com", version: "v1", kind: "App"}
#Spec: {
	hosts?: [...string] & list.UniqueItems()
	class: *"standard" | string @cueop(immutable)
}
parent: metadata: name: string
children: {}
`), 0o644)
	data := filepath.Join(t.TempDir(), "testdata")
	os.MkdirAll(filepath.Join(data, "app"), 0o755)
	os.WriteFile(filepath.Join(data, "app", "a.txtar"), []byte("-- parent.yaml --\napiVersion: t.example.com/v1\nkind: App\nmetadata: {name: a}\nspec: {}\n"), 0o644)
	root := newRoot()
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetArgs([]string{"--templates", tmpl, "vet", "--testdata", data})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"render only  spec.hosts & list.UniqueItems() (",
		"estimated rule cost exceeds budget",
		"admission    spec.class @cueop(immutable) (",
		"CEL rule on spec.class: self == oldSelf",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("vet output lacks %q:\n%s", want, buf.String())
		}
	}
}
