package main

// The tests of cueop vet: the golden cases, conversion round trips, the
// paths a template reads, gates that never open, policies, name limits and
// the bounds of a spec.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// vetPasses runs cueop with args (vet and its flags), fails the test if it
// fails, and returns its output.
func vetPasses(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	return out
}

// vetSays fails the test unless vet's output out says each of wants.
func vetSays(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
}

// TestVetComparesGoldenCases: vet passes on the project's golden cases and
// says so, and fails, naming the case and the section, when a case's
// expected children.yaml is not what the template renders.
func TestVetComparesGoldenCases(t *testing.T) {
	out := vetPasses(t, "vet", "--testdata", "../../testdata")
	vetSays(t, out, "golden cases in ../../testdata match their expected sections")
	testdata := testkit.CopyDir(t, "../../testdata")
	path := filepath.Join(testdata, "staticsite", "defaults.txtar")
	testkit.EditFile(t, path, testkit.Replace("  replicas: 2\n", "  replicas: 7\n")) // fails if it has no replicas: 2 to change
	out, err := run(t, "vet", "--testdata", testdata)
	if err == nil {
		t.Fatalf("vet passed a golden case whose children.yaml is wrong:\n%s", out)
	}
	for _, want := range []string{"1 of ", "golden cases differ", path + ": children.yaml differs", "-   replicas: 7", "+   replicas: 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("vet error lacks %q: %v", want, err)
		}
	}
}

// TestVetChecksConversionRoundTrips: vet converts the golden parents and
// the generated specs of RedisCluster to the other versions and back, and
// refuses a fromHub that forgets minReady, naming the field and the
// position of the conversion.
func TestVetChecksConversionRoundTrips(t *testing.T) {
	out, err := run(t, "vet", "--testdata", "../../testdata")
	if err != nil || !strings.Contains(out, "ok   rediscluster: ") || !strings.Contains(out, "specs convert to every other version and back") {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	tmpl := testkit.CopyTemplates(t)
	forget := "\t\t\tif in.spec.minReady != _|_ {minReady: in.spec.minReady}\n\t\t}\n\t}\n}"
	v2 := filepath.Join(tmpl, "rediscluster", "v2.cue")
	testkit.EditFile(t, v2, testkit.Replace(forget, "\t\t}\n\t}\n}")) // fails if v2.cue has no fromHub of minReady to forget
	root := newRoot()
	root.SetOut(&strings.Builder{})
	root.SetErr(&strings.Builder{})
	root.SetArgs([]string{"--templates", tmpl, "vet", "--testdata", "../../testdata"})
	err = root.Execute()
	// The operator's reload refuses it with the same message
	// (engine/operator TestReloadRefusesLossyConversion).
	want := "kind rediscluster: " + v2 + ":36:2: conversion versions.v2.fromHub (v1 to v2) loses field spec.minReady in the round trip v1 to v2 and back"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("vet of a fromHub that forgets minReady: %v, want the field and the position", err)
	}
}

// TestVetReportsObservedPaths: `cueop vet` says, per kind, which paths of
// the observed children the template reads.
func TestVetReportsObservedPaths(t *testing.T) {
	out := vetPasses(t, "vet", "--testdata", "../../testdata")
	vetSays(t, out, "observed     [*].status.conditions\n", "parent       metadata.name, spec\n",
		"observed     deployment.status.availableReplicas\n")
	if strings.Contains(out, "whole object") {
		t.Errorf("the project's kinds read no whole object:\n%s", out)
	}
}

// TestVetWarnsOfAbsentReads: a status field, a condition and ready that
// read fields no Deployment has are warned about with their CUE
// positions, though no golden case observes the Deployment; the kind still
// vets.
func TestVetWarnsOfAbsentReads(t *testing.T) {
	templates, cases := testkit.CopyTemplates(t), testkit.CopyDir(t, "../../testdata")
	testkit.Remove(t, cases, "webapp/migrated.txtar") // the case with an observed.yaml
	testkit.EditFile(t, filepath.Join(templates, "webapp", "webapp.cue"), func(src string) string {
		return strings.Replace(src, "*observed.deployment.status.availableReplicas | 0", "*observed.deployment.status.readyReplica | 0", 1) +
			`conditions: Scaled: {status: *(observed.deployment.spec.replica == parent.spec.replicas) | false, reason: "Scaled"}
_exposed: *(observed.service.status.loadBalancer.ingres != _|_) | false
ready: status.availableReplicas >= parent.spec.minAvailable && _exposed
`
	})
	if out, err := run(t, "--templates", templates, "test", "--testdata", cases, "--update"); err != nil {
		t.Fatalf("test --update: %v\n%s", err, out)
	}
	out := vetPasses(t, "--templates", templates, "vet", "--testdata", cases)
	vetSays(t, out,
		"webapp.cue:173:22: status.availableReplicas reads observed.deployment.status.readyReplica, which Deployment apps/v1 does not have",
		"webapp.cue:175:32: conditions.Scaled reads observed.deployment.spec.replica, which Deployment apps/v1 does not have",
		"webapp.cue:176:13: ready reads observed.service.status.loadBalancer.ingres (through _exposed), which Service v1 does not have")
	if n := strings.Count(out, "readyReplica, which"); n != 1 {
		t.Errorf("the read of status.readyReplica is warned about %d times, want once:\n%s", n, out)
	}
}

// TestVetWarnsWhereGateNeverOpens: a readyWhen that reads a field no Pod
// has, and one that reads a child of a later wave through a hidden field,
// are warned about with their CUE positions; the kind still vets.
func TestVetWarnsWhereGateNeverOpens(t *testing.T) {
	templates := testkit.CopyDir(t, "../../testdata/gates/templates")
	testkit.EditFile(t, filepath.Join(templates, "gated", "gated.cue"), func(src string) string {
		return src + `_appUp: *(observed.app.status.phase == "Running") | false
readyWhen: {
	if _spec.worker != "" {worker: *(observed.worker.status.ready == true) | false}
	if _spec.consumer && _spec.worker != "" {gate: _appUp}
}
`
	})
	out := vetPasses(t, "--templates", templates, "vet", "--testdata", "../../testdata/gates/cases")
	vetSays(t, out,
		"gated.cue:96:35: readyWhen.worker: reads observed.worker.status.ready: no Pod has that field, so worker is never ready: the gate never opens",
		"gated.cue:94:11: readyWhen.gate: reads observed.app.status.phase (through _appUp), a child of wave 1, which is applied only once gate (wave 0) is ready: the gate never opens")
}

// TestVetChecksPolicies runs vet on the lifecycle test kind: its cases pass,
// and a case whose policies the render refuses (recreate on a
// PersistentVolumeClaim) fails vet with the template position.
func TestVetChecksPolicies(t *testing.T) {
	const templates = "../../testdata/lifecycle/templates"
	vetPasses(t, "--templates", templates, "vet", "--testdata", "../../testdata/lifecycle/cases")
	cases := testkit.Dir(t, map[string]string{"keeper/recreate-pvc.txtar": "-- parent.yaml --\napiVersion: lifecycle.example.com/v1\nkind: Keeper\nmetadata: {name: k, namespace: ns}\n" +
		"spec: {storageClass: standard, recreateData: true}\n-- children.yaml --\n"})
	_, err := run(t, "--templates", templates, "vet", "--testdata", cases)
	if err == nil || !strings.Contains(err.Error(), "policies.data: recreate: a PersistentVolumeClaim is never recreated") ||
		!strings.Contains(err.Error(), "keeper.cue:") {
		t.Fatalf("vet: %v; want the refused policy with its position", err)
	}
}

// TestVetNameLimitOverAllCases: the CR-name limit vet warns of is the
// least over the golden cases, not the first case's: a backup CronJob
// (52 characters at most) that only the second case renders limits the
// CR's name to 45, where the first case's children take any.
func TestVetNameLimitOverAllCases(t *testing.T) {
	templates, testdata := writeHostile(t, map[string]string{
		"templates/app/app.cue": `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {backup: *false | bool}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name}
if parent.spec.backup {
	children: backup: {apiVersion: "batch/v1", kind: "CronJob", metadata: name: "\(parent.metadata.name)-backup",
		spec: {schedule: "0 * * * *", jobTemplate: spec: template: spec: {restartPolicy: "Never", containers: [{name: "b", image: "busybox"}]}}}
}
`,
		"testdata/app/ok.txtar":        "-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: {}\n",
		"testdata/app/zz-backup.txtar": "-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a}\nspec: {backup: true}\n",
	})
	out, err := runIn(templates, "vet", "--testdata", testdata, "--crds", t.TempDir())
	if err != nil {
		t.Fatalf("vet: %v\n%s", err, out)
	}
	want := "warn kind app: CR names of up to 45 characters render, though the API server allows 253: with 46, "
	if !strings.Contains(out, want) || !strings.Contains(out, "children.backup") || !strings.Contains(out, "zz-backup.txtar)") {
		t.Errorf("vet output lacks %q naming the CronJob of zz-backup.txtar:\n%s", want, out)
	}
}

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
