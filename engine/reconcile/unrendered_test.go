package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/internal/testkit"
)

// mapSpokeTemplate's v2 gives every entry of spec.m a field, drop, that
// the hub v1 lacks.
const mapSpokeTemplate = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: int, m?: [string]: {keep: int}}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {a: int, m?: [string]: {keep: int, drop?: string}}
	toHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.m != _|_ {m: {for k, v in in.spec.m {(k): keep: v.keep}}}}}
	fromHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.m != _|_ {m: {for k, v in in.spec.m {(k): keep: v.keep}}}}}
}
`

// atHub loads the kind App of src (hub v1, spoke v2) and returns it with
// the App x of generation 2 written at v2 with spec (JSON), converted to
// the hub.
func atHub(t *testing.T, src, spec string) (*template.Kind, *unstructured.Unstructured) {
	t.Helper()
	k := loadKinds(t, workertest.Templates(t, map[string]string{"app/app.cue": src})).Kinds[0]
	c, err := convert.New(k)
	if err != nil {
		t.Fatal(err)
	}
	v2 := &unstructured.Unstructured{}
	if err := v2.UnmarshalJSON([]byte(`{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x", "namespace": "ns", "generation": 2}, "spec": ` + spec + `}`)); err != nil {
		t.Fatal(err)
	}
	hub, err := c.Convert(v2, "v1")
	if err != nil {
		t.Fatal(err)
	}
	return k, hub
}

// unrenderedEvent runs emitEvents of a reconcile of the CR cr of k and
// returns the one Event it emits, failing the test unless it emits one.
func unrenderedEvent(t *testing.T, k *template.Kind, cr *unstructured.Unstructured) string {
	t.Helper()
	rec := record.NewFakeRecorder(4)
	testRun(&Reconciler{Recorder: rec}, k, cr).emitEvents()
	if len(rec.Events) != 1 {
		t.Fatalf("%d Events, want 1", len(rec.Events))
	}
	return <-rec.Events
}

// TestSpecNotRenderedBounded: a spec written at v2 with a spoke-only field
// in each of 200 entries gets one SpecNotRendered Event that names ten of
// them and counts the rest, not an Event of every path.
func TestSpecNotRenderedBounded(t *testing.T) {
	m := map[string]any{}
	for i := range 200 {
		m[fmt.Sprintf("key-%03d", i)] = map[string]any{"keep": i, "drop": "x"}
	}
	spec, _ := json.Marshal(map[string]any{"a": 1, "m": m})
	k, hub := atHub(t, mapSpokeTemplate, string(spec))
	ev := unrenderedEvent(t, k, hub)
	if !strings.HasPrefix(ev, "Warning SpecNotRendered spec.m.key-000.drop (v2), spec.m.key-001.drop (v2),") ||
		!strings.Contains(ev, "spec.m.key-009.drop (v2) and 190 more: kept by the annotation cueop.dev/conversion.v2 and read back at that version") || len(ev) > 1024 {
		t.Errorf("Event (%d bytes) = %.300s...", len(ev), ev)
	}
}

// TestSpecNotRenderedOncePerGeneration: a reconcile whose status keeps
// the generation before (children not listed, render busy, the status
// write failed) emits no SpecNotRendered, so its retries do not repeat
// it; the one that records the generation does, and the next ones at that
// generation do not.
func TestSpecNotRenderedOncePerGeneration(t *testing.T) {
	k, hub := atHub(t, mapSpokeTemplate, `{"a": 1, "m": {"k": {"keep": 1, "drop": "x"}}}`)
	rec := record.NewFakeRecorder(8)
	r := &Reconciler{Recorder: rec}
	for range 3 {
		for _, behind := range []func(*run){
			func(x *run) { x.observeFailed = errors.New("list failed") },
			func(x *run) { x.quiet = true },
			func(x *run) { x.statusFailed = true },
		} {
			x := testRun(r, k, hub)
			behind(x)
			x.emitEvents()
		}
	}
	if n := len(rec.Events); n != 0 {
		t.Fatalf("%d Events from reconciles that keep the generation before, want none", n)
	}
	testRun(r, k, hub).emitEvents()
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d Events from the reconcile that records the generation, want 1", n)
	}
	_ = unstructured.SetNestedField(hub.Object, int64(2), "status", "observedGeneration")
	testRun(r, k, hub).emitEvents()
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d Events after the generation is recorded, want still 1", n)
	}
}

// TestSpecNotRenderedWording: a field the hub lacks is "not rendered"; a
// value the hub normalises is "rendered as the hub holds it", not called
// lost.
func TestSpecNotRenderedWording(t *testing.T) {
	k, hub := atHub(t, testkit.NormalisingKind, `{"a": 1, "tier": "Gold", "c": 3}`)
	ev := unrenderedEvent(t, k, hub)
	const kept = ": kept by the annotation cueop.dev/conversion.v2 and read back at that version, but "
	want := "Warning SpecNotRendered spec.c (v2)" + kept + "not rendered: the template renders the hub version v1, which cannot hold them; " +
		"spec.tier (v2)" + kept + "rendered as the hub holds it: the template renders the hub version v1, which changes it"
	if ev != want {
		t.Errorf("Event =\n%s\nwant\n%s", ev, want)
	}
}

// TestSpecNotRenderedNamesTheAnnotations: the Event names the annotation
// of each version whose fields it tells of, not a placeholder.
func TestSpecNotRenderedNamesTheAnnotations(t *testing.T) {
	got := unrenderedMessage([]convert.UnrenderedField{
		{Path: "spec.a", Version: "v2"}, {Path: "spec.b", Version: "v2"}, {Path: "spec.c", Version: "v3"},
		{Path: "spec.d", Version: "v3", Changed: true},
	}, "v1")
	want := "spec.a (v2), spec.b (v2), spec.c (v3): kept by the annotations cueop.dev/conversion.v2, cueop.dev/conversion.v3 and read back at their versions, " +
		"but not rendered: the template renders the hub version v1, which cannot hold them; " +
		"spec.d (v3): kept by the annotation cueop.dev/conversion.v3 and read back at that version, but rendered as the hub holds it: the template renders the hub version v1, which changes it"
	if got != want {
		t.Errorf("message =\n%s\nwant\n%s", got, want)
	}
}
