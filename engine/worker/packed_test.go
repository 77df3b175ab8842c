package worker_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/engine/worker/workertest"
)

const numericKind = `package num

resource: {group: "num.test.example", version: "v1", kind: "Num"}
#Spec: {
	size:  *3 | int @cueop(immutable)
	ratio: *2.0 | float @cueop(immutable)
}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: x: "y"}
status: total: parent.spec.size
`

// TestNumericImmutableComesPacked: a kind with numeric immutable fields
// renders them as json.Number, which Pack does not keep: the worker answers
// as JSON, and RenderPacked packs the result as decoded (int64, float64),
// so that the memo still keeps it.
func TestNumericImmutableComesPacked(t *testing.T) {
	p, in := oneCR(t, "num/num.cue", numericKind)
	want, err := render.RenderInputs(in, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, packed, err := p.RenderPacked(context.Background(), in, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in process immutable %#v; worker %#v", want.Immutable, got.Immutable)
	if jsonOf(t, got.Children) != jsonOf(t, want.Children) || jsonOf(t, got.Status) != jsonOf(t, want.Status) {
		t.Errorf("worker render differs from in process:\n%s\n%s", jsonOf(t, got), jsonOf(t, want))
	}
	if packed == nil {
		t.Error("RenderPacked gave no Packed: the memo would keep nothing and render on every reconcile")
	} else if hit := packed.Unpack(); !reflect.DeepEqual(hit, got) {
		t.Errorf("memo hit %#v\nmiss %#v", hit, got)
	}
}

const nullStatusKind = `package nul

resource: {group: "nul.test.example", version: "v1", kind: "Nul"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: x: "y"}
status: null
`

// TestNullStatusHitEqualsMiss: a template whose status is null renders a
// nil Status; a worker's answer gives it as {}, on a miss and on a memo hit
// (Reuse of the Packed) alike.
func TestNullStatusHitEqualsMiss(t *testing.T) {
	p, in := oneCR(t, "nul/nul.cue", nullStatusKind)
	got, packed, err := p.RenderPacked(context.Background(), in, render.Options{})
	if err != nil || packed == nil {
		t.Fatal(err, packed)
	}
	hit := render.Reuse(in, packed.Unpack())
	if got.Status == nil || !reflect.DeepEqual(hit, got) {
		t.Errorf("memo hit %#v\nmiss %#v", hit, got)
	}
}

func jsonOf(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// oneCR is a pool of workers and the inputs of a CR with an empty spec of
// the one kind src declares, as file of a templates directory.
func oneCR(t *testing.T, file, src string) (*worker.Pool, render.Inputs) {
	t.Helper()
	set, err := template.Load(workertest.Templates(t, map[string]string{file: src}))
	if err != nil {
		t.Fatal(err)
	}
	k := set.Kinds[0]
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.Resource.GroupVersionKind().GroupVersion().String(), "kind": k.Resource.Kind,
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u"}, "spec": map[string]any{}}}
	return newPool(t, worker.Options{}), render.Inputs{Kind: k, Parent: parent}
}
