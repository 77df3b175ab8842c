package main

import (
	"strings"
	"testing"
)

// TestVetRendersCRBuiltFromSchema: a child that only an optional field of
// the spec brings, which no golden case sets, is still rendered (from a
// CR built with every field of the schema set) and its misspelt field
// refused, naming the check, the child, the field and the CR.
func TestVetRendersCRBuiltFromSchema(t *testing.T) {
	tmpl := tTemplates(t, "app/app.cue", `package app
resource: {group: "t.example.com", version: "v1", kind: "App"}
#Spec: {port?: int & >=1 & <=65535}
parent: {metadata: name: string, spec: #Spec}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}
if parent.spec.port != _|_ {
	children: svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name, spec: prots: [{port: parent.spec.port}]}
}
`)
	out, err := run(t, "--templates", tmpl, "vet", "--testdata", appTestdata(t), "--crds", t.TempDir())
	// The position is where the template writes the field, found in its
	// files (the child is made under a condition).
	if err == nil || !strings.Contains(err.Error(), "[children] a App built from its schema (every field set): app/app.cue:7:") ||
		!strings.Contains(err.Error(), "children.svc: ") ||
		!strings.Contains(err.Error(), ".spec.prots: field not declared in schema") {
		t.Fatalf("vet: %v, want children.svc's spec.prots refused\n%s", err, out)
	}
}
