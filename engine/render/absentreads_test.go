package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
)

// TestLoadWarnings: reads of status, conditions, ready and readyWhen of a
// field the child's kind lacks are found without a CR, for the children
// whose kind the template gives outright; a sound read, a child under a
// condition and a kind with no built-in schema give none.
func TestLoadWarnings(t *testing.T) {
	k, err := tryCompile(t, `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n?: int}
parent: {metadata: {name: string}, spec: #Spec}
observed: [string]: {...}
children: job: {apiVersion: "batch/v1", kind: "Job", metadata: name: parent.metadata.name, spec: template: spec: {restartPolicy: "Never", containers: [{name: "m", image: "x"}]}}
children: widget: {apiVersion: "parts.example.com/v1", kind: "Widget", metadata: name: "w"}
if parent.spec.n != _|_ {children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "c"}}
_done: *(observed.job.status.succeded > 0) | false
status: {
	succeeded: *observed.job.status.succeeded | 0
	active:    *observed.job.status.activ | 0
	size:      *observed.widget.spec.sise | 0
	other:     *observed.cm.bogus | ""
}
conditions: Done: {status: _done, reason: "Done"}
ready: *(observed.job.spec.paralelism == 1) | false
readyWhen: job: *(observed.job.status.compleionTime != _|_) | false
`)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(render.LoadWarnings(k), "\n")
	for _, want := range []string{
		"app.cue:12:14: status.active reads observed.job.status.activ, which Job batch/v1 does not have",
		"app.cue:9:10: conditions.Done reads observed.job.status.succeded (through _done), which Job batch/v1 does not have",
		"app.cue:17:10: ready reads observed.job.spec.paralelism, which Job batch/v1 does not have",
		"app.cue:18:19: readyWhen.job reads observed.job.status.compleionTime, which Job batch/v1 does not have",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"status.succeeded,", "sise", "bogus"} {
		if strings.Contains(got, not) {
			t.Errorf("warnings name %s:\n%s", not, got)
		}
	}
	if n := len(render.LoadWarnings(k)); n != 4 {
		t.Errorf("%d warnings, want 4:\n%s", n, got)
	}
}
