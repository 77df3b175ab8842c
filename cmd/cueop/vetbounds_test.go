package main

import (
	"strings"
	"testing"
)

// TestMain lets the test binary serve as vet's trial process (vettrial.go),
// as the cueop binary does.
// vetHostile vets the kind app of hostileKind-like src with one golden case
// of spec, and returns vet's error.
func vetHostile(t *testing.T, src, spec string) error {
	t.Helper()
	templates, testdata := writeHostile(t, map[string]string{
		"templates/app/app.cue": src,
		"testdata/app/ok.txtar": "-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: " + spec + "\n",
	})
	_, err := runIn(templates, "vet", "--testdata", testdata)
	return err
}

// TestVetBoundsRepeatTogether: a string bound and a count bound that are
// harmless alone but together ask strings.Repeat for a terabyte: vet
// survives the render that dies of it (a trial process does), and names
// the two bounds (not the third, harmless one).
func TestVetBoundsRepeatTogether(t *testing.T) {
	err := vetHostile(t, `package app
import "strings"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {
	line:     string & strings.MaxRunes(1000000)
	count:    int & <=1000000
	replicas: *1 | int & <=3
}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: d: strings.Repeat(parent.spec.line, parent.spec.count)}
`, "{line: x, count: 3}")
	want := "kind app: #Spec accepts spec.count at <=1000000 and spec.line at strings.MaxRunes(1000000) together, which kills the render (the render process died: fatal error:"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "replicas") {
		t.Fatalf("vet: %v\nwant %q", err, want)
	}
}

// TestVetBoundsListAtMaxItems: three nested for clauses over a list at
// its list.MaxItems bound run out of the render budget; vet names the list
// and its bound, and where the template grows.
func TestVetBoundsListAtMaxItems(t *testing.T) {
	err := vetHostile(t, `package app
import "list"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {items: [...string] & list.MaxItems(2000)}
parent: spec: #Spec
_n: len([for a in parent.spec.items for b in parent.spec.items for c in parent.spec.items {1}])
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: n: "\(_n)"}
`, "{items: [a, b]}")
	for _, want := range []string{
		"kind app: #Spec accepts spec.items at list.MaxItems(2000), which renders beyond the render budget",
		"app/app.cue:6:10 comprehension (3 nested for)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vet: %v\nwant %q", err, want)
		}
	}
}

// TestVetBoundsWithinLimits: bounds of every sort (a number, a string, a
// list of objects whose fields are bounded, nested) whose limits render
// within the budget pass.
func TestVetBoundsWithinLimits(t *testing.T) {
	err := vetHostile(t, `package app
import ("list", "strings")
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {
	count: int & <=100
	name:  string & strings.MaxRunes(63)
	ports: [...{port: int & >0 & <=65535, name?: string & strings.MaxRunes(15)}] & list.MaxItems(50)
	nested: {weight: *1 | int & <=3}
}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: {
	for i, p in parent.spec.ports {"p\(i)": "\(p.port)"}
	n: strings.Repeat(parent.spec.name, parent.spec.count)
}}
`, "{count: 1, name: x, ports: []}")
	if err != nil {
		t.Fatalf("vet: %v", err)
	}
}

// TestVetBoundsMapAtMaxFields: a map at its struct.MaxFields bound (the
// CRD's maxProperties) driving nested for clauses runs out of the render
// budget; vet names the map and its bound.
func TestVetBoundsMapAtMaxFields(t *testing.T) {
	err := vetHostile(t, `package app
import "struct"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {env: {[string]: string} & struct.MaxFields(5000)}
parent: spec: #Spec
_n: len([for a, _ in parent.spec.env for b, _ in parent.spec.env for c, _ in parent.spec.env {1}])
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: n: "\(_n)"}
`, "{env: {A: x}}")
	if want := "kind app: #Spec accepts spec.env at struct.MaxFields(5000), which renders beyond the render budget"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("vet: %v\nwant %q", err, want)
	}
}
