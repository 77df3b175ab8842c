package convert_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/engine/worker/workertest"
)

// lossy is a kind whose hub has a field b that v2 lacks and whose v2 has a
// field c that the hub lacks.
const lossy = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: int, b?: string}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {a: int, c?: int}
	toHub: {in: spec: _, out: spec: a: in.spec.a}
	fromHub: {in: spec: _, out: spec: a: in.spec.a}
}
`

// load compiles the kind package src, one file, and its converter.
func load(t testing.TB, src string) (*convert.Converter, error) {
	t.Helper()
	set, err := templateLoad(t, map[string]string{"app/app.cue": src})
	if err != nil {
		return nil, err
	}
	return convert.New(set.Kinds[0])
}

// mustLoad is load that fails the test on error.
func mustLoad(t testing.TB, src string) *convert.Converter {
	t.Helper()
	c, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// templateLoad loads a templates directory holding files.
func templateLoad(t testing.TB, files map[string]string) (*template.Set, error) {
	t.Helper()
	return template.Load(workertest.Templates(t, files))
}

func TestAnnotationCarriesWhatTheTargetLacks(t *testing.T) {
	c := mustLoad(t, lossy)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1, "b": "kept"}}`)
	v2 := mustConvert(t, c, in, "v2")
	if got := v2.GetAnnotations()[wellknown.AnnotationConversionPrefix+"v1"]; got != `{"b":"kept"}` {
		t.Errorf("annotation = %q, want the field v2 cannot hold, b, alone", got)
	}
	if back := mustConvert(t, c, v2, "v1"); !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip = %v, want %v", back.Object, in.Object)
	}
	// Edited at v2: what v2 says wins, what only v1 can say is kept.
	v2.Object["spec"] = map[string]any{"a": int64(2)}
	back := mustConvert(t, c, v2, "v1")
	want := map[string]any{"a": int64(2), "b": "kept"}
	if !reflect.DeepEqual(back.Object["spec"], want) || len(back.GetAnnotations()) != 0 {
		t.Errorf("after an edit at v2: %v, want spec %v and no annotation", back.Object, want)
	}
}

// wide is lossy with a string a, which both versions hold.
const wide = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: string, b?: string, n?: {keep: string, drop?: string}}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {a: string, n?: {keep: string}}
	toHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.n != _|_ {n: keep: in.spec.n.keep}}}
	fromHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.n != _|_ {n: keep: in.spec.n.keep}}}
}
`

// TestAnnotationCarriesOnlyWhatTheTargetCannotHold: the annotation holds
// the fields v2 lacks (b, n.drop), not the whole spec: a CR whose 200 KiB
// field both versions hold converts with its 100 KiB field v2 lacks, and
// comes back whole.
func TestAnnotationCarriesOnlyWhatTheTargetCannotHold(t *testing.T) {
	c := mustLoad(t, wide)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x", "namespace": "t"}, "spec": {"a": "", "n": {"keep": "k", "drop": "d"}}}`)
	unstructured.SetNestedField(in.Object, strings.Repeat("a", 200<<10), "spec", "a")
	unstructured.SetNestedField(in.Object, strings.Repeat("b", 100<<10), "spec", "b")
	v2, err := c.Convert(in, "v2")
	if err != nil {
		t.Fatalf("convert to v2: %.300v", err)
	}
	var carried map[string]any
	if err := json.Unmarshal([]byte(v2.GetAnnotations()[wellknown.AnnotationConversionPrefix+"v1"]), &carried); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"b": strings.Repeat("b", 100<<10), "n": map[string]any{"drop": "d"}}; !reflect.DeepEqual(carried, want) {
		t.Errorf("annotation carries %.200v, want only b and n.drop", carried)
	}
	if back := mustConvert(t, c, v2, "v1"); !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip: %.300v", back.Object)
	}
}

// TestAnnotationTooLargeRefused: a field v2 cannot hold of 300 KiB would
// take metadata.annotations past the API server's 256 KiB: the conversion
// to v2 is refused with an AnnotationTooLargeError naming the object, the
// field and the limit, instead of a result the API server refuses as a
// whole (metadata.annotations: Too long).
func TestAnnotationTooLargeRefused(t *testing.T) {
	c := mustLoad(t, wide)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x", "namespace": "t"}, "spec": {"a": "a"}}`)
	unstructured.SetNestedField(in.Object, strings.Repeat("b", 300<<10), "spec", "b")
	_, err := c.Convert(in, "v2")
	var tooLarge *convert.AnnotationTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("convert to v2: %.300v, want an AnnotationTooLargeError", err)
	}
	for _, want := range []string{"App t/x", "the fields spec.b that v2 cannot hold", "over the API server's limit of 256 KiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// Away from the hub, the object is given without the field, marked:
	// the reader at v2 has it, a writer at v2 is refused.
	var partial *convert.IncompleteError
	if !errors.As(err, &partial) || partial.Converted() == nil {
		t.Fatalf("convert to v2: %.300v, want an IncompleteError with the object", err)
	}
	read := partial.Converted()
	if _, has := read.Object["spec"].(map[string]any)["b"]; has || read.GetAPIVersion() != "apps.test.example/v2" {
		t.Errorf("the object read at v2 = %.300v, want it at v2 without spec.b", read.Object)
	}
	if got := read.GetAnnotations()[wellknown.AnnotationIncompletePrefix+"v1"]; got != "1 fields" {
		t.Errorf("marker %q, want 1 fields", got)
	}
	if _, has := read.GetAnnotations()[wellknown.AnnotationConversionPrefix+"v1"]; has {
		t.Error("the object read at v2 carries the annotation that does not fit")
	}
	_, err = c.Convert(read, "v1")
	if err == nil || !strings.Contains(err.Error(), "App t/x: conversion v2 to v1: the object was read at v2 without fields v2 cannot hold") || !strings.Contains(err.Error(), "write it at v1") {
		t.Errorf("a write at v2 of the object read without spec.b: %v, want it refused", err)
	}

	// A marker a user set at the hub means nothing: it is not shown at v2
	// and refuses nothing.
	forged := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "f", "namespace": "t", "annotations": {"cueop.dev/conversion-incomplete.v1": "x", "cueop.dev/conversion-incomplete.v2": "x"}}, "spec": {"a": "a"}}`)
	atV2 := mustConvert(t, c, forged, "v2")
	for k := range atV2.GetAnnotations() {
		if strings.HasPrefix(k, wellknown.AnnotationIncompletePrefix) {
			t.Errorf("a forged marker %s shown at v2", k)
		}
	}
	mustConvert(t, c, atV2, "v1")

	// Annotations so near the limit that the marker would not fit: the
	// largest are dropped to make room, and counted (before: refused, and
	// with it every list at v2); a write of it at v2 is refused as well.
	near := in.DeepCopy()
	near.SetAnnotations(map[string]string{"note": strings.Repeat("n", 256<<10-10), "a": "b"})
	unstructured.SetNestedField(near.Object, "b", "spec", "b")
	_, err = c.Convert(near, "v2")
	if !errors.As(err, &partial) || partial.Converted() == nil {
		t.Fatalf("convert to v2 with annotations at the limit: %.300v, want an IncompleteError with the object", err)
	}
	a := partial.Converted().GetAnnotations()
	if _, has := a["note"]; has || a["a"] != "b" || a[wellknown.AnnotationIncompletePrefix+"v1"] != "1 fields, 1 annotations" {
		t.Errorf("annotations at v2: %.300v, want note dropped, a kept, marked 1 fields, 1 annotations", a)
	}
	if _, has := partial.Converted().Object["spec"].(map[string]any)["b"]; has {
		t.Error("the object read at v2 holds spec.b")
	}
	if _, err := c.Convert(partial.Converted(), "v1"); err == nil || !strings.Contains(err.Error(), "write it at v1") {
		t.Errorf("a write at v2 of the object read without its annotations: %v, want it refused", err)
	}
}

func TestAnnotationCarriesASpokeFieldThroughTheHub(t *testing.T) {
	c := mustLoad(t, lossy)
	in := object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1, "c": 3}}`)
	hub := mustConvert(t, c, in, "v1")
	if hub.Object["spec"].(map[string]any)["c"] != nil || hub.GetAnnotations()[wellknown.AnnotationConversionPrefix+"v2"] == "" {
		t.Fatalf("hub = %v, want no c and the v2 spec in the annotation", hub.Object)
	}
	if back := mustConvert(t, c, hub, "v2"); !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip = %v, want %v", back.Object, in.Object)
	}
}

// TestForgedAnnotationCannotInjectFields: a tenant writes the annotation
// of the hub's spec on a v2 object, with fields the hub's #Spec refuses
// (a field it does not declare, a field of the wrong type) beside the ones
// the v2 spec converts to: the conversion to the hub is refused, naming
// the object, the annotation and the field, rather than storing them.
func TestForgedAnnotationCannotInjectFields(t *testing.T) {
	c := mustLoad(t, lossy)
	for name, forged := range map[string]string{
		"undeclared field": `{"a":1,"evil":"x"}`,
		"wrong type":       `{"a":1,"b":5}`,
	} {
		in := object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x", "namespace": "t"}, "spec": {"a": 1}}`)
		in.SetAnnotations(map[string]string{wellknown.AnnotationConversionPrefix + "v1": forged})
		out, err := c.Convert(in, "v1")
		if err == nil {
			t.Errorf("%s: converted to %v, want refused", name, out.Object["spec"])
			continue
		}
		for _, want := range []string{"App t/x", wellknown.AnnotationConversionPrefix + "v1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", name, err, want)
			}
		}
	}
}

// TestAnnotationOfTheSourceVersionIsStale: an object at v1 carrying an
// annotation of a v1 spec (written by hand, or copied from a read at v2)
// converts to v2 without it: its own spec is the v1 spec, and the stale one
// restored on the way back would change the object (b appearing).
func TestAnnotationOfTheSourceVersionIsStale(t *testing.T) {
	c := mustLoad(t, lossy)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1}}`)
	in.SetAnnotations(map[string]string{wellknown.AnnotationConversionPrefix + "v1": `{"a":1,"b":"stale"}`})
	v2 := mustConvert(t, c, in, "v2")
	if a := v2.GetAnnotations(); len(a) != 0 {
		t.Errorf("at v2: annotations %v, want none", a)
	}
	back := mustConvert(t, c, v2, "v1")
	if want := map[string]any{"a": int64(1)}; !reflect.DeepEqual(back.Object["spec"], want) {
		t.Errorf("round trip: spec %v, want %v", back.Object["spec"], want)
	}
}

// TestLenientForgedAnnotationCannotInjectFields: the webhook's lenient
// converter treats a forged annotation as the strict one does: toward the
// hub (a write at v2) a field the hub's schema does not declare is
// refused, naming the object, the annotation and the field; away from the
// hub (a read at v2) such a field is not answered, the annotation's other
// fields restored (before: the lenient converter answered both).
func TestLenientForgedAnnotationCannotInjectFields(t *testing.T) {
	c := mustLoad(t, lossy)
	c = c.Lenient()
	in := object(t, `{"apiVersion": "apps.test.example/v2", "kind": "App", "metadata": {"name": "x", "namespace": "t"}, "spec": {"a": 1}}`)
	in.SetAnnotations(map[string]string{wellknown.AnnotationConversionPrefix + "v1": `{"a":1,"evil":"x"}`})
	out, err := c.Convert(in, "v1")
	if err == nil {
		t.Errorf("toward the hub: converted to %v, want refused", out.Object["spec"])
	} else {
		for _, want := range []string{"App t/x", wellknown.AnnotationConversionPrefix + "v1", "spec.evil"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("toward the hub: error %q does not name %q", err, want)
			}
		}
	}

	hub := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x", "namespace": "t"}, "spec": {"a": 1}}`)
	hub.SetAnnotations(map[string]string{wellknown.AnnotationConversionPrefix + "v2": `{"a":1,"c":3,"evil":"x"}`})
	read, err := c.Convert(hub, "v2")
	if err != nil {
		t.Fatalf("away from the hub: %v", err)
	}
	if want := map[string]any{"a": int64(1), "c": int64(3)}; !reflect.DeepEqual(read.Object["spec"], want) {
		t.Errorf("away from the hub: spec %v, want %v", read.Object["spec"], want)
	}
}
