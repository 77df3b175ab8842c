package main

import (
	"strings"
	"testing"
)

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
