package main

import (
	"bytes"
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

	tmpl := tTemplates(t, "app/app.cue", `package app
import "list"
resource: {group: "t.example.com", version: "v1", kind: "App"}
#Spec: {
	hosts?: [...string] & list.UniqueItems()
	class: *"standard" | string @cueop(immutable)
}
parent: metadata: name: string
children: {}
`)
	data := appTestdata(t)
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
