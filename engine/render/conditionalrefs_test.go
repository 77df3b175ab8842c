package render_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// conditionalRefsKind declares its reference only when the spec names
// settings, in a top-level if nested in another: whether it has one is
// known only once a CR is filled in.
const conditionalRefsKind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int, settingsFrom?: string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
referenced: [string]: {...}
if parent.spec.n > 0 {
	if parent.spec.settingsFrom != _|_ {
		references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.spec.settingsFrom}
	}
}
children: app: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "a"
	data: {
		if referenced.settings != _|_ {greeting: referenced.settings.data.greeting}
		if referenced.settings == _|_ {greeting: "none"}
	}
}
`

// TestReferencesInTopLevelIf: a reference declared in a top-level if (at
// any depth) is read for the CRs whose spec makes it exist, and only for
// those.
func TestReferencesInTopLevelIf(t *testing.T) {
	k := compileKind(t, "app/app.cue", conditionalRefsKind)
	if !k.References {
		t.Fatal("a kind declaring references in a top-level if: References = false")
	}
	without := app(1)
	if refs, err := render.References(k, without, render.Options{}); err != nil || len(refs) != 0 {
		t.Fatalf("references of a CR without settingsFrom = %+v, %v; want none", refs, err)
	}
	with := app(1)
	with.Object["spec"] = map[string]any{"n": int64(1), "settingsFrom": "s"}
	refs, err := render.References(k, with, render.Options{})
	if err != nil || len(refs) != 1 || refs[0].ID != "settings" || refs[0].Name != "s" {
		t.Fatalf("references of a CR with settingsFrom = %+v, %v; want settings named s", refs, err)
	}
	got, missing := render.Resolve(refs, "ns", []*unstructured.Unstructured{configMap("ns", "s", nil, map[string]any{"greeting": "hello"})})
	if len(missing) != 0 {
		t.Fatalf("missing %v", missing)
	}
	res, err := render.RenderInputs(render.Inputs{Kind: k, Parent: with, Referenced: got}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, _, _ := unstructured.NestedString(res.Children[0].Object.Object, "data", "greeting"); g != "hello" {
		t.Errorf("greeting = %q, want the referenced hello", g)
	}
	// The contract holds for a conditional reference too.
	bad := app(1)
	bad.Object["spec"] = map[string]any{"n": int64(1), "settingsFrom": "s"}
	k2 := compileKind(t, "app/app.cue", strings.Replace(conditionalRefsKind, `name: parent.spec.settingsFrom}`, `name: parent.spec.settingsFrom, namespace: "kube-system"}`, 1))
	if _, err := render.References(k2, bad, render.Options{}); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("a conditional reference with a namespace = %v, want the contract's refusal", err)
	}
}
