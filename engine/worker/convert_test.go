package worker_test

import (
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/engine/worker/workertest"
)

// loadHostileVersions writes the kind whose conversion a tenant controls
// into a templates directory and loads it.
func loadHostileVersions(t testing.TB) *template.Kind {
	t.Helper()
	set, err := template.Load(workertest.Templates(t, map[string]string{"hostileversions/hostileversions.cue": workertest.HostileVersionsKind}))
	if err != nil {
		t.Fatal(err)
	}
	return set.Kinds[0]
}

func hostileV1(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hostileversions.test.example/v1", "kind": "Shifter",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name},
		"spec":     spec,
		"status":   map[string]any{"observedGeneration": int64(1)},
	}}
}

func converter(t testing.TB, p *worker.Pool, k *template.Kind, b budget.Budget) *worker.Converter {
	t.Helper()
	c, err := p.Converter(k, b)
	if err != nil || c == nil {
		t.Fatalf("Converter = %v, %v", c, err)
	}
	return c
}

// TestConversionInWorker: a conversion in a worker is the lenient
// conversion in process, both ways; the same conversion again is
// answered from the operator's memo, identical.
func TestConversionInWorker(t *testing.T) {
	k := loadHostileVersions(t)
	p := newPool(t, worker.Options{})
	c := converter(t, p, k, budget.Budget{})
	in := hostileV1("ns", "a", map[string]any{"line": "ab", "count": int64(3), "items": []any{int64(1), int64(2)}})
	local, err := convert.New(k)
	if err != nil {
		t.Fatal(err)
	}
	want, err := local.Lenient().Convert(in, "v2")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := c.Convert(in, "v2")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("worker conversion = %v\nwant %v", got.Object, want.Object)
		}
	}
	back, err := c.Convert(want, "v1")
	if err != nil || !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip = %v, %v; want %v", back, err, in.Object)
	}
	if started, killed := p.Stats(); started != 1 || killed != 0 {
		t.Errorf("workers started %d, killed %d; want 1, 0", started, killed)
	}
}

// TestConversionBombEndsOnlyItsWorker: a CR within its schema's bounds
// whose conversion allocates a terabyte at once crashes the worker, not
// this process: the conversion fails naming the CR and the crash; asked
// again, it is refused at once (no other worker ends); and the next
// conversion, of another tenant's CR, succeeds on a new worker.
func TestConversionBombEndsOnlyItsWorker(t *testing.T) {
	k := loadHostileVersions(t)
	p := newPool(t, worker.Options{})
	c := converter(t, p, k, budget.Budget{})
	_, err := c.Convert(hostileV1("tenant-a", "bomb", workertest.ConversionBombSpec()), "v2")
	if err == nil {
		t.Fatal("conversion of the bomb succeeded")
	}
	for _, want := range []string{"Shifter tenant-a/bomb: conversion from v1 to v2: kind hostileversions: ", "conversion crashed its worker (", "out of memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
	_, again := c.Convert(hostileV1("tenant-a", "bomb", workertest.ConversionBombSpec()), "v2")
	if again == nil || !strings.HasPrefix(again.Error(), err.Error()+" (not evaluated again until ") {
		t.Errorf("the bomb converted again = %v, want its error again, refused at once", again)
	}
	got, err := c.Convert(hostileV1("tenant-b", "fine", map[string]any{"count": int64(2), "trigger": "now"}), "v2")
	if err != nil || got.Object["spec"].(map[string]any)["repeated"] != "xx" {
		t.Fatalf("conversion after the crash = %v, %v", got, err)
	}
	if started, killed := p.Stats(); started != 2 || killed != 1 {
		t.Errorf("workers started %d, killed %d; want 2, 1", started, killed)
	}
}

// TestSlowConversionsSpareOtherTenants: conversions of one tenant that
// run out of their budget (three nested loops over 2000 items, within
// the schema's bounds) end their workers, one after the other in their
// tenant's share (each waits its turn: nobody retries a read refused);
// they leave nothing running that would refuse the conversion of another
// tenant's CR afterwards, or wait for it meanwhile.
func TestSlowConversionsSpareOtherTenants(t *testing.T) {
	k := loadHostileVersions(t)
	p := newPool(t, worker.Options{Workers: 2})
	c := converter(t, p, k, budget.Budget{Time: 200 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Convert(hostileV1("tenant-a", "slow", workertest.SlowConversionSpec()), "v2")
		})
	}
	// Meanwhile, and after: another tenant converts.
	for range 2 {
		got, err := c.Convert(hostileV1("tenant-b", "quick", map[string]any{"trigger": "now"}), "v2")
		if err != nil || got.Object["spec"].(map[string]any)["loops"] != int64(0) {
			t.Fatalf("conversion of tenant-b = %v, %v", got, err)
		}
		wg.Wait()
	}
	for _, err := range errs { // each waited its turn, then ran out of its budget
		if err == nil || !strings.Contains(err.Error(), "Shifter tenant-a/slow: conversion ") || !strings.Contains(err.Error(), "budget") {
			t.Errorf("slow conversion = %v, want it over its budget", err)
		}
	}
	if _, killed := p.Stats(); killed == 0 {
		t.Error("no worker killed")
	}
}

// TestLenientConversionKeepsTheSchemaBounds: a spec out of its version's
// bounds (a review may hold anything) is refused by the spec's field
// path before the conversion is evaluated leniently: no worker ends.
func TestLenientConversionKeepsTheSchemaBounds(t *testing.T) {
	k := loadHostileVersions(t)
	p := newPool(t, worker.Options{})
	c := converter(t, p, k, budget.Budget{})
	spec := workertest.ConversionBombSpec()
	spec["count"] = int64(1000000000000)
	_, err := c.Convert(hostileV1("tenant-a", "huge", spec), "v2")
	if err == nil || !strings.Contains(err.Error(), "Shifter tenant-a/huge: conversion v1 to v2: spec at v1 is out of its schema's bounds: spec.count: Invalid value: 1000000000000: count in body should be less than or equal to 1000000") {
		t.Fatalf("conversion of a count out of bounds = %v, want it refused naming spec.count", err)
	}
	t.Log(err)
	if _, killed := p.Stats(); killed != 0 {
		t.Errorf("workers killed %d, want 0", killed)
	}
}

// TestConversionAfterTemplatesDirectoryGone: a converter whose templates
// directory is gone (a revision superseded, its files removed) still
// converts in a fresh worker, from the revision's own files.
func TestConversionAfterTemplatesDirectoryGone(t *testing.T) {
	dir := workertest.Templates(t, map[string]string{"hostileversions/hostileversions.cue": workertest.HostileVersionsKind})
	set := templatetest.Load(t, dir)
	p := newPool(t, worker.Options{})
	c := converter(t, p, set.Kinds[0], budget.Budget{})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	got, err := c.Convert(hostileV1("ns", "gone", map[string]any{"count": int64(2), "trigger": "now"}), "v2")
	if err != nil || got.Object["spec"].(map[string]any)["repeated"] != "xx" {
		t.Fatalf("conversion with the templates directory gone = %v, %v", got, err)
	}
}
