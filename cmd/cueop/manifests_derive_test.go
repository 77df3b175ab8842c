package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// sprocketKind renders its children only under conditions the CR fills
// in: a Service under an if, Pods in a for, an Ingress in a top-level if
// block; it references a ConfigMap, and extra (CUE source of one more
// child, "" for none) is added to its children.
func sprocketKind(extra string) string {
	return `package sprocket

import "list"

resource: {group: "derive.test.example", version: "v1", kind: "Sprocket"}
#Spec: {expose: *false | bool, replicas: *0 | int, ingress: *false | bool, kind: *"ConfigMap" | string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: {
	if parent.spec.expose {
		svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name, spec: ports: [{port: 80}]}
	}
	for i in list.Range(0, parent.spec.replicas, 1) {
		"pod-\(i)": {apiVersion: "v1", kind: "Pod", metadata: name: "\(parent.metadata.name)-\(i)", spec: containers: [{name: "c", image: "x"}]}
	}
` + extra + `
}
if parent.spec.ingress {
	children: ing: {apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: name: parent.metadata.name}
}
if parent.spec.expose {
	references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.metadata.name}
}
`
}

// grantsRule tells whether rules grant verb on resource of group.
func grantsRule(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

// TestManifestsDeriveFromTemplate: a kind with no golden case nor sample
// gets the role of what its template can render and reference, every
// conditional branch included; a child whose kind is computed from the CR
// is a warning with its position.
func TestManifestsDeriveFromTemplate(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue":    testModule,
		"templates/sprocket/sprocket.cue": sprocketKind(`	extra: {apiVersion: "v1", kind: parent.spec.kind, metadata: name: "x"}`),
		"testdata/.keep":                  "",
		"samples/.keep":                   "",
	})
	out := t.TempDir()
	msg, err := run(t, "--templates", filepath.Join(dir, "templates"), "manifests", "--out-dir", out,
		"--testdata", filepath.Join(dir, "testdata"), "--samples", filepath.Join(dir, "samples"))
	if err != nil {
		t.Fatalf("manifests: %v\n%s", err, msg)
	}
	rules := readKindRules(t, filepath.Join(out, kindsPath))
	for _, want := range [][3]string{{"", "services", "create"}, {"", "pods", "delete"}, {"networking.k8s.io", "ingresses", "patch"},
		{"", "configmaps", "watch"}, {"derive.test.example", "sprockets/finalizers", "update"}} {
		if !grantsRule(rules, want[0], want[1], want[2]) {
			t.Errorf("kinds.yaml grants no %s on %s.%s: %v", want[2], want[1], want[0], rules)
		}
	}
	if grantsRule(rules, "", "configmaps", "create") {
		t.Errorf("kinds.yaml grants create on configmaps, which the Sprocket only references")
	}
	if want := "sprocket.cue:15:34: children.extra: kind is computed (parent.spec.kind)"; !strings.Contains(msg, want) {
		t.Errorf("manifests printed no warning %q:\n%s", want, msg)
	}
}

// TestManifestsRefusesDerivedKind: a child of a kind the administrator
// does not allow is refused by manifests and vet, with its position,
// though no golden case nor sample renders it.
func TestManifestsRefusesDerivedKind(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"templates/cue.mod/module.cue": testModule,
		"templates/sprocket/sprocket.cue": sprocketKind(`	if parent.spec.expose {
		secret: {apiVersion: "v1", kind: "Secret", metadata: name: parent.metadata.name}
	}`),
		"testdata/sprocket/plain.txtar": "-- parent.yaml --\napiVersion: derive.test.example/v1\nkind: Sprocket\nmetadata: {name: p, namespace: ns}\nspec: {replicas: 1}\n",
	})
	templates, cases := filepath.Join(dir, "templates"), filepath.Join(dir, "testdata")
	const want = "sprocket.cue:16:36: children.secret: kind Secret is not in the allowed kinds"
	msg, err := run(t, "--templates", templates, "manifests", "--out-dir", t.TempDir(), "--testdata", cases, "--samples", cases)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("manifests: %v, want %q\n%s", err, want, msg)
	}
	if out, err := run(t, "--templates", templates, "test", "--testdata", cases, "--update"); err != nil {
		t.Fatalf("test --update: %v\n%s", err, out)
	}
	msg, err = run(t, "--templates", templates, "vet", "--testdata", cases, "--samples", cases, "--crds", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("vet: %v, want %q\n%s", err, want, msg)
	}
}
