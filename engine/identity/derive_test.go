package identity

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

// loadKind loads the one kind of the package gadget, written from files
// (below gadget/), with no golden case nor sample anywhere.
func loadKind(t *testing.T, files map[string]string) *template.Kind {
	t.Helper()
	tree := map[string]string{}
	for name, src := range files {
		tree["gadget/"+name] = src
	}
	set, err := template.Load(testkit.Templates(t, tree))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Kinds) != 1 {
		t.Fatalf("%d kinds, want 1", len(set.Kinds))
	}
	return set.Kinds[0]
}

const gadgetHead = `package gadget

resource: {group: "derive.test.example", version: "v1", kind: "Gadget"}
#Spec: {expose: *false | bool, ingress: *false | bool, replicas: *1 | int, kind: *"ConfigMap" | string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
`

// TestDeriveEveryBranch: the children under an if, under a for, in a
// top-level if block, of a definition or an embedded file, and the
// references, whichever way the CR is filled in; no warning when each
// kind is written.
func TestDeriveEveryBranch(t *testing.T) {
	k := loadKind(t, map[string]string{"gadget.cue": "@extern(embed)\n" + strings.Replace(gadgetHead, "\n\n", "\n\nimport \"list\"\n\n", 1) + `
_base: _ @embed(file=base.yaml)
#Deployment: {apiVersion: "apps/v1", kind: "Deployment", ...}
children: {
	cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}
	if parent.spec.expose {
		svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name}
	}
	for i in list.Range(0, parent.spec.replicas, 1) {
		"pod-\(i)": {apiVersion: "v1", kind: "Pod", metadata: name: "\(parent.metadata.name)-\(i)"}
	}
	deploy: #Deployment & {metadata: name: parent.metadata.name}
	job: _base & {metadata: name: parent.metadata.name}
}
if parent.spec.ingress {
	children: ing: {apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: name: parent.metadata.name}
}
references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.metadata.name}
`, "base.yaml": "apiVersion: batch/v1\nkind: Job\n"})
	got, warnings := Derive(k)
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
	want := render.MustKindSet("ConfigMap,Service,Pod,Deployment.apps,Job.batch,Ingress.networking.k8s.io")
	if got.Children.String() != want.String() {
		t.Errorf("children %s, want %s", got.Children, want)
	}
	if got.References.String() != "ConfigMap" {
		t.Errorf("references %s, want ConfigMap", got.References)
	}
	if got.GroupKind != (schema.GroupKind{Group: "derive.test.example", Kind: "Gadget"}) || got.Plural != "gadgets" {
		t.Errorf("kind %v %s", got.GroupKind, got.Plural)
	}
}

// TestDeriveRules: a kind with no golden case nor sample gets the rights
// of what its template renders, straight from Derive.
func TestDeriveRules(t *testing.T) {
	k := loadKind(t, map[string]string{"gadget.cue": gadgetHead + `
children: {}
if parent.spec.expose {
	children: svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name}
}
`})
	d, _ := Derive(k)
	rules := d.Rules()
	if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Equal(r.APIGroups, []string{""}) && slices.Equal(r.Resources, []string{"services"}) && slices.Contains(r.Verbs, "create")
	}) {
		t.Errorf("rules %v grant no create on services", rules)
	}
}

// TestDeriveWarnsComputed: a kind the template computes from the CR, or
// takes from what cannot be followed, is a warning at its position, not
// a silent miss; the children it can tell are kept.
func TestDeriveWarnsComputed(t *testing.T) {
	k := loadKind(t, map[string]string{"gadget.cue": gadgetHead + `
children: {
	cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}
	extra: {apiVersion: "v1", kind: parent.spec.kind, metadata: name: "x"}
	for i, o in [{apiVersion: "v1", kind: "Secret"}] {
		"o-\(i)": o & {metadata: name: "o"}
	}
}
references: settings: {apiVersion: "v1", kind: parent.spec.kind, name: "s"}
`})
	d, warnings := Derive(k)
	if d.Children.String() != "ConfigMap" || len(d.References) != 0 {
		t.Errorf("children %s, references %s", d.Children, d.References)
	}
	for _, want := range []string{
		"gadget.cue:9:34: children.extra: kind is computed (parent.spec.kind)",
		`gadget.cue:11:13: children."o-\(i)": o cannot be followed`,
		"gadget.cue:14:48: references.settings: kind is computed (parent.spec.kind)",
	} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning %q in %q", want, warnings)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("%d warnings, want 3: %q", len(warnings), warnings)
	}
}

// TestDeriveAlternatives: a kind written as a disjunction gives each of
// its values; branches that conflict give nothing.
func TestDeriveAlternatives(t *testing.T) {
	k := loadKind(t, map[string]string{"gadget.cue": gadgetHead + `
children: {
	svc: {apiVersion: "v1", kind: *"Service" | "ConfigMap", metadata: name: parent.metadata.name}
	w: {
		if parent.spec.expose {apiVersion: "apps/v1", kind: "Deployment"}
		if !parent.spec.expose {apiVersion: "batch/v1", kind: "Job"}
		metadata: name: parent.metadata.name
	}
}
`})
	d, warnings := Derive(k)
	if want := "ConfigMap,Deployment.apps,Job.batch,Service"; d.Children.String() != want || len(warnings) > 0 {
		t.Errorf("children %s, want %s; warnings %q", d.Children, want, warnings)
	}
}

// TestAllowedRefuses: a derived child of a kind the administrator does
// not allow, or a reference of a kind not readable, is an error naming it
// and where it is written, as a render of it would be.
func TestAllowedRefuses(t *testing.T) {
	k := loadKind(t, map[string]string{"gadget.cue": gadgetHead + `
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}
if parent.spec.expose {
	children: s: {apiVersion: "v1", kind: "Secret", metadata: name: parent.metadata.name}
}
references: r: {apiVersion: "v1", kind: "Secret", name: "s"}
`})
	uses, _ := Uses(k)
	ok, err := Allowed(uses, render.Options{})
	if len(ok) != 1 || ok[0].GroupKind.Kind != "ConfigMap" {
		t.Errorf("allowed %v, want the ConfigMap only", ok)
	}
	for _, want := range []string{"gadget.cue:9:40: children.s: kind Secret is not in the allowed kinds",
		"gadget.cue:11:41: references.r: kind Secret is not in the readable kinds"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if ok, err := Allowed(uses, render.Options{AllowedKinds: render.MustKindSet("ConfigMap,Secret"), ReadableKinds: render.MustKindSet("Secret")}); err != nil || len(ok) != 3 {
		t.Errorf("with Secrets allowed: %v, %v", ok, err)
	}
}
