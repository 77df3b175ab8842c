package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/admission"
	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// header is a kind App with a spec of one optional field.
const header = `package app
import "list"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int & >=1 & <=5, image: *"nginx" | string, size?: int & >=0 & <=100000}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
_l: list
`

// pod is a Pod child whose spec is podSpec.
func pod(podSpec string) string {
	return `children: pod: {apiVersion: "v1", kind: "Pod", metadata: name: parent.metadata.name, spec: {` + podSpec + `}}` + "\n"
}

func kind(t *testing.T, body string) *template.Kind {
	t.Helper()
	return templatetest.Compile(t, map[string]string{"app/app.cue": header + body})
}

func goldenCase(t *testing.T, k *template.Kind, spec string) admission.Case {
	t.Helper()
	c, err := admission.ParseCase(k, "testdata/app/basic.txtar", []byte("-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: a, namespace: ns}\nspec: "+spec+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func admit(k *template.Kind, cases ...admission.Case) admission.Verdict {
	return admission.Admit(context.Background(), admission.Input{Kind: k, Eval: render.InProcess{}, Cases: cases})
}

// refused is the one refusal of v by check, failing the test when there
// is none.
func refused(t *testing.T, v admission.Verdict, check string) admission.Finding {
	t.Helper()
	for _, f := range v.Refused {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no refusal by %s: refused %v, warned %v", check, v.Refused, v.Warnings)
	return admission.Finding{}
}

func TestGoodKindAdmitted(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`))
	v := admit(k, goldenCase(t, k, "{replicas: 2}"))
	if v.Err() != nil || len(v.Warnings) > 0 {
		t.Fatalf("refused %v, warned %v; want nothing", v.Refused, v.Warnings)
	}
}

// TestMisspeltPodField: a Pod child with containerz is refused, naming the
// child, the field and where the template writes it, both for the golden
// case and, without one, for the CR built from the schema.
func TestMisspeltPodField(t *testing.T) {
	k := kind(t, pod(`containerz: [{name: "app", image: parent.spec.image}]`))
	for name, cases := range map[string][]admission.Case{"golden case": {goldenCase(t, k, "{}")}, "no case": nil} {
		t.Run(name, func(t *testing.T) {
			v := admit(k, cases...)
			f := refused(t, v, admission.CheckChildren)
			if !strings.Contains(f.Message, "children.pod:") || !strings.Contains(f.Message, "containerz") {
				t.Errorf("message %q names neither the child nor the field", f.Message)
			}
			if !strings.HasSuffix(f.Pos, "app.cue:8:93") {
				t.Errorf("position %q, want where app.cue writes containerz", f.Pos)
			}
			if err := v.Err(); err == nil || !strings.Contains(err.Error(), "[children] ") || !strings.Contains(err.Error(), "containerz") {
				t.Errorf("Err() = %v, want the check and the field", err)
			}
			if cases != nil && f.Source != "testdata/app/basic.txtar" {
				t.Errorf("source %q, want the golden case", f.Source)
			}
			if cases == nil && !strings.Contains(f.Source, "App built from its schema") {
				t.Errorf("source %q, want the CR built from the schema", f.Source)
			}
		})
	}
}

func TestMisspeltStatefulSetField(t *testing.T) {
	k := kind(t, `children: sts: {apiVersion: "apps/v1", kind: "StatefulSet", metadata: name: parent.metadata.name, spec: {
	servicename: parent.metadata.name
	selector: matchLabels: app: "a"
	template: {metadata: labels: app: "a", spec: containers: [{name: "db", image: parent.spec.image}]}
}}
`)
	f := refused(t, admit(k, goldenCase(t, k, "{}")), admission.CheckChildren)
	if !strings.Contains(f.Message, "children.sts:") || !strings.Contains(f.Message, ".spec.servicename") {
		t.Errorf("message %q names neither the child nor the field", f.Message)
	}
}

// TestReferenceWithNamespaceRefused: a reference that names a namespace,
// under a condition of the spec the load cannot decide (a literal one is
// refused by the load), is refused by the render of the CR built with
// every field set, with its position.
func TestReferenceWithNamespaceRefused(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+
		`references: {if parent.spec.size != _|_ {settings: {apiVersion: "v1", kind: "ConfigMap", name: "s", namespace: "kube-system"}}}`+"\n")
	v := admit(k)
	f := refused(t, v, admission.CheckRender)
	if !strings.Contains(f.Message, "references.settings.namespace: field not allowed") || !strings.HasSuffix(f.Pos, "app.cue:9:101") {
		t.Errorf("finding %+v: want the namespace named with its position", f)
	}
}

// TestReferenceOutsideReadableKinds: a literal reference to a Secret is
// refused before any render, with its position.
func TestReferenceOutsideReadableKinds(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+
		`references: pw: {apiVersion: "v1", kind: "Secret", name: "s"}`+"\n")
	v := admit(k)
	f := refused(t, v, admission.CheckReferences)
	if len(v.Refused) != 1 || !strings.HasPrefix(f.Message, "kind app: ") || !strings.HasSuffix(f.Pos, "app.cue:9:42") || !strings.Contains(f.Message, "references.pw: kind Secret is not in the readable kinds (ConfigMap)") {
		t.Errorf("refused %v", v.Refused)
	}
}

// TestUnguardedObservedRead: a ready that reads an observed child without
// a guard fails every first render: vet refuses it (the render error), as
// admission does; a guarded read of a field no Pod has only warns.
func TestUnguardedObservedRead(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+`ready: observed.pod.status.phase == "Running"`+"\n")
	f := refused(t, admit(k, goldenCase(t, k, "{}")), admission.CheckRender)
	if !strings.Contains(f.Message, "observed children may be absent") || f.Pos == "" {
		t.Errorf("finding %+v: want the unguarded read explained, with its position", f)
	}

	k = kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+`ready: *(observed.pod.status.phaze == "Running") | false`+"\n")
	v := admit(k, goldenCase(t, k, "{}"))
	if v.Err() != nil {
		t.Fatalf("a guarded read of an absent field refused: %v", v.Err())
	}
	if len(v.Warnings) != 1 || v.Warnings[0].Check != admission.CheckReads ||
		!strings.Contains(v.Warnings[0].Message, "ready reads observed.pod.status.phaze, which Pod v1 does not have") ||
		!strings.HasSuffix(v.Warnings[0].Pos, "app.cue:9:10") {
		t.Errorf("warnings %+v: want one of the absent read, with its position", v.Warnings)
	}
}

// TestNoCaseRendersFromSchema: with no golden case, the CR built with
// every field of the schema set renders the child that only an optional
// field brings, and its misspelt field is refused.
func TestNoCaseRendersFromSchema(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+
		`if parent.spec.size != _|_ {children: svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name, spec: prots: [{port: 80}]}}`+"\n")
	f := refused(t, admit(k), admission.CheckChildren)
	if !strings.Contains(f.Message, "children.svc:") || !strings.Contains(f.Source, "every field set") {
		t.Errorf("finding %+v: want children.svc of the CR with every field set", f)
	}
}

// TestBudgetRefuses: a template whose render runs out of the budget is
// refused, by the budget, in about the budget's time, and no other CR is
// rendered then (each would leave an evaluation running on abandoned).
func TestBudgetRefuses(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`)+
		`_n: len(parent.metadata.name) * 3`+"\n"+
		`_cells: [for i in _l.Range(0, _n, 1) for j in _l.Range(0, _n, 1) for k in _l.Range(0, _n, 1) {i*j*k}]`+"\n"+
		`children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: n: "\(len(_cells))"}`+"\n")
	start := time.Now()
	v := admission.Admit(context.Background(), admission.Input{Kind: k, Eval: render.InProcess{},
		Options: render.Options{Budget: budget.Budget{Time: 10 * time.Millisecond, Memory: 64 << 20, MaxAbandoned: 10}}})
	f := refused(t, v, admission.CheckRender)
	if !strings.Contains(f.Message, "render evaluation budget exceeded") || !strings.Contains(f.Message, "comprehension (3 nested for)") {
		t.Errorf("finding %+v: want the budget named, and where the template grows", f)
	}
	if len(v.Refused) != 1 {
		t.Errorf("refused %v: want the renders stopped after the first out of budget", v.Refused)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("admission took %s", d)
	}
	t.Logf("refused in %s: %s", time.Since(start), f)
	// The evaluations out of budget run on, abandoned: let them end.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	budget.WaitAbandoned(ctx, k.Name, 0)
	t.Logf("abandoned evaluations ended after %s", time.Since(start))
}

// TestBuiltCRWithReference: with no golden case, a reference by name is
// given an object of its kind and name, so that the CR built from the
// schema renders and its children are checked.
func TestBuiltCRWithReference(t *testing.T) {
	k := kind(t, pod(`containerz: [{name: "app", image: parent.spec.image}]`)+
		`references: settings: {apiVersion: "v1", kind: "ConfigMap", name: parent.metadata.name + "-settings"}`+"\n")
	f := refused(t, admit(k), admission.CheckChildren)
	if !strings.Contains(f.Message, "children.pod:") || !strings.Contains(f.Message, "containerz") {
		t.Errorf("finding %+v: want children.pod's containerz", f)
	}
}

// TestBuiltCRProvesNothing: a spec built from the schema that the
// template refuses (a constraint between fields the CRD does not carry),
// or a guessed referenced object the template cannot read, refuses
// nothing: the golden case renders.
func TestBuiltCRProvesNothing(t *testing.T) {
	k := templatetest.Compile(t, map[string]string{"app/app.cue": `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {low: int & >=0 & <=10, high: int & >low & <=20, image: *"nginx" | string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
references: settings: {apiVersion: "v1", kind: "ConfigMap", name: "s"}
referenced: settings: {...}
children: pod: {apiVersion: "v1", kind: "Pod", metadata: name: parent.metadata.name, spec: containers: [{name: "app", image: parent.spec.image + referenced.settings.data.tag}]}
`})
	c, err := admission.ParseCase(k, "testdata/app/basic.txtar", []byte(`-- parent.yaml --
apiVersion: apps.test.example/v1
kind: App
metadata: {name: a, namespace: ns}
spec: {low: 1, high: 2}
-- referenced.yaml --
apiVersion: v1
kind: ConfigMap
metadata: {name: s, namespace: ns}
data: {tag: ":1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if v := admit(k, c); v.Err() != nil {
		t.Fatalf("refused: %v", v.Err())
	}
}

// TestCancelledRefuses: an admission whose context is done before its
// renders ran refuses, rather than admitting what it did not check.
func TestCancelledRefuses(t *testing.T) {
	k := kind(t, pod(`containers: [{name: "app", image: parent.spec.image}]`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := admission.Admit(ctx, admission.Input{Kind: k})
	if f := refused(t, v, admission.CheckRender); !strings.Contains(f.Message, "context canceled") {
		t.Errorf("finding %+v, want the cancellation named", f)
	}
}

// TestSampleRendered: a sample CR is rendered with the objects beside it,
// and named in what it makes refused.
func TestSampleRendered(t *testing.T) {
	k := kind(t, `references: settings: {apiVersion: "v1", kind: "ConfigMap", name: "s"}
referenced: settings: {...}
children: pod: {apiVersion: "v1", kind: "Pod", metadata: name: parent.metadata.name, spec: containers: [{name: "app", image: referenced.settings.data.image}]}
`)
	sample, err := admission.ParseCase(k, "sample", []byte("-- parent.yaml --\napiVersion: apps.test.example/v1\nkind: App\nmetadata: {name: x, namespace: ns}\nspec: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "s", "namespace": "ns"}, "data": map[string]any{"image": "nginx"}}}
	in := admission.Input{Kind: k, Samples: []*unstructured.Unstructured{sample.Parent}, Referenced: []*unstructured.Unstructured{cm}}
	if v := admission.Admit(context.Background(), in); v.Err() != nil {
		t.Fatalf("sample with its ConfigMap refused: %v", v.Err())
	}
	in.Referenced = nil
	f := refused(t, admission.Admit(context.Background(), in), admission.CheckRender)
	if f.Source != "sample App/x" || !strings.Contains(f.Message, "references.settings: ConfigMap s not found in namespace ns") {
		t.Errorf("finding %+v, want the sample's missing ConfigMap", f)
	}
}
