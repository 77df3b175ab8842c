package render_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// TestLoadWarnings: reads of status, conditions, ready and readyWhen of a
// field the child's kind lacks are found without a CR, for the children
// whose kind the template gives outright; a sound read, a child under a
// condition and a kind with no built-in schema give none.
func TestLoadWarnings(t *testing.T) {
	k := observingApp(t, "{n?: int}", `children: job: {apiVersion: "batch/v1", kind: "Job", metadata: name: parent.metadata.name, spec: template: spec: {restartPolicy: "Never", containers: [{name: "m", image: "x"}]}}
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
	got := warningsHave(t, k,
		"app.cue:12:14: status.active reads observed.job.status.activ, which Job batch/v1 does not have",
		"app.cue:9:10: conditions.Done reads observed.job.status.succeded (through _done), which Job batch/v1 does not have",
		"app.cue:17:10: ready reads observed.job.spec.paralelism, which Job batch/v1 does not have",
		"app.cue:18:19: readyWhen.job reads observed.job.status.compleionTime, which Job batch/v1 does not have",
	)
	for _, not := range []string{"status.succeeded,", "sise", "bogus"} {
		if strings.Contains(got, not) {
			t.Errorf("warnings name %s:\n%s", not, got)
		}
	}
	if n := len(render.LoadWarnings(k)); n != 4 {
		t.Errorf("%d warnings, want 4:\n%s", n, got)
	}
}

// TestReadsFollowWhatIsSelected: a read through status.ready is of that
// field only, not of the rest of status or of children, so Ready does not
// blame a read it does not make; a read through a let of an observed child
// is of the path the let's name continues with.
func TestReadsFollowWhatIsSelected(t *testing.T) {
	k := observingApp(t, "{n?: int}", `children: deploy: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d"}
children: job: {apiVersion: "batch/v1", kind: "Job", metadata: {name: "j", annotations: x: "\(*observed.deploy.status.childBogus | 0)"}}
let d = observed.deploy
let o = observed
status: {
	ready:  *observed.deploy.status.readyReplicas | 0
	viaLet: *d.status.letBogus | 0
	viaObs: *o.deploy.status.obsBogus | 0
}
status: bogus: *observed.deploy.status.bogus | 0
ready: status.ready == 3 && children.job.metadata.name == "j"
`)
	children := []render.Child{child("deploy", "apps/v1", "Deployment"), child("job", "batch/v1", "Job")}
	if got := render.ReadyAbsent(k, children, false); len(got) != 0 {
		t.Errorf("ReadyAbsent = %v, want none: ready reads status.ready only", got)
	}
	got := warningsHave(t, k,
		"app.cue:12:11: status.viaLet reads observed.deploy.status.letBogus (through d), which Deployment apps/v1 does not have",
		"app.cue:13:11: status.viaObs reads observed.deploy.status.obsBogus (through o), which Deployment apps/v1 does not have",
		"app.cue:15:17: status.bogus reads observed.deploy.status.bogus, which Deployment apps/v1 does not have",
	)
	if strings.Contains(got, "childBogus") {
		t.Errorf("warnings blame ready for a read of a child's field:\n%s", got)
	}
}

// TestReadyAbsentOfRenderedGates: without ready, Ready depends on the
// readyWhen of the children rendered only.
func TestReadyAbsentOfRenderedGates(t *testing.T) {
	k := observingApp(t, "{n?: int}", `children: deploy: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d"}
if parent.spec.n != _|_ {
	children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "c"}
	readyWhen: cm: *(observed.deploy.status.gateBogus > 0) | false
}
`)
	if got := render.ReadyAbsent(k, []render.Child{child("deploy", "apps/v1", "Deployment")}, false); len(got) != 0 {
		t.Errorf("ReadyAbsent without cm = %v, want none", got)
	}
	got := render.ReadyAbsent(k, []render.Child{child("deploy", "apps/v1", "Deployment"), child("cm", "v1", "ConfigMap")}, false)
	if len(got) != 1 || !strings.Contains(got[0].String(), "readyWhen.cm reads observed.deploy.status.gateBogus") {
		t.Errorf("ReadyAbsent with cm = %v, want the read of readyWhen.cm", got)
	}
}

// warningsHave is k's load warnings, one a line, failing the test for
// each of want they lack.
func warningsHave(t *testing.T, k *template.Kind, want ...string) string {
	t.Helper()
	got := strings.Join(render.LoadWarnings(k), "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q:\n%s", w, got)
		}
	}
	return got
}

func child(id, apiVersion, kind string) render.Child {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return render.Child{ID: id, Object: u}
}

// TestOutputReadsOncePerPosition: a hidden field that every status field
// names is listed once per read it makes, not once per status field, so
// what each reconcile of a CR not Ready goes through stays the size of
// the template.
func TestOutputReadsOncePerPosition(t *testing.T) {
	const n = 40
	var b strings.Builder
	b.WriteString("package app\nresource: {group: \"apps.test.example\", version: \"v1\", kind: \"App\"}\n#Spec: {}\nparent: {metadata: {name: string}, spec: #Spec}\nobserved: [string]: {...}\nchildren: {}\n_all: {\n")
	for i := range n {
		fmt.Fprintf(&b, "\tr%d: *observed.d%d.status.readyReplicas | 0\n", i, i)
	}
	b.WriteString("}\nstatus: {\n")
	for i := range n {
		fmt.Fprintf(&b, "\ts%d: len(_all) + %d\n", i, i)
	}
	b.WriteString("}\nready: status.s0 > 0\n")
	k := compileKind(t, "app/app.cue", b.String())
	if got := len(k.Outputs.Reads); got != 2*n {
		t.Errorf("%d reads, want %d: one per read of _all for status and one for ready", got, 2*n)
	}
}

// TestReadsThroughEveryDeclaration: a field declared twice is followed
// through both: ready reads status.bogus, declared before the status
// struct that CUE's resolution names.
func TestReadsThroughEveryDeclaration(t *testing.T) {
	k := observingApp(t, "{}", `children: deploy: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d"}
status: bogus: *observed.deploy.status.bogus | 0
status: {ready: *observed.deploy.status.readyReplicas | 0}
ready: status.bogus > 0
`)
	got := render.ReadyAbsent(k, []render.Child{child("deploy", "apps/v1", "Deployment")}, false)
	if len(got) != 1 || !strings.HasSuffix(got[0].String(), "app.cue:7:17: ready reads observed.deploy.status.bogus (through status), which Deployment apps/v1 does not have") {
		t.Errorf("ReadyAbsent = %v, want the read of status.bogus", got)
	}
}

// TestReadsOfListElements: a field of an element of an observed list, read
// through a comprehension's variable (directly or over a hidden field with
// a default), is checked at the element's schema; a field the element has
// and the values of a map are not warned about.
func TestReadsOfListElements(t *testing.T) {
	k := observingApp(t, "{}", `children: deploy: {apiVersion: "apps/v1", kind: "Deployment", metadata: name: "d"}
_conds: *observed.deploy.status.conditions | []
status: {
	available: len([for c in _conds if c.typ == "Available" && c.status == "True" {c}]) > 0
	images: [for i, c in observed.deploy.spec.template.spec.containers {c.imag}]
	names: [for c in observed.deploy.spec.template.spec.containers {c.name}]
	labels: [for k, v in observed.deploy.metadata.labels {v}]
}
`)
	got := warningsHave(t, k,
		"app.cue:9:37: status.available reads observed.deploy.status.conditions[].typ (through c), which Deployment apps/v1 does not have",
		"app.cue:10:70: status.images reads observed.deploy.spec.template.spec.containers[].imag (through c), which Deployment apps/v1 does not have",
	)
	if n := len(render.LoadWarnings(k)); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, got)
	}
}
