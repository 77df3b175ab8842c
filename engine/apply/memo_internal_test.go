package apply

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// liveOf is obj stamped, at uid and resourceVersion rv, with the entry the
// API server records for an apply of it by manager, its fieldsV1 as text.
func liveOf(t *testing.T, a *Applier, obj *unstructured.Unstructured, rv string) (*unstructured.Unstructured, string) {
	t.Helper()
	stamped, hash, err := stamp(obj)
	if err != nil {
		t.Fatal(err)
	}
	set, _, err := a.fieldSet(stamped)
	if err != nil {
		t.Fatal(err)
	}
	var fields bytes.Buffer
	if err := set.ToJSONStream(&fields); err != nil {
		t.Fatal(err)
	}
	live := stamped.DeepCopy()
	live.SetUID("u1")
	live.SetResourceVersion(rv)
	live.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
		"manager": a.fieldManager(), "operation": "Apply", "apiVersion": obj.GetAPIVersion(), "fieldsType": "FieldsV1",
		"fieldsV1": fields.String(),
	}}
	return live, hash
}

// TestMemoKeyedByEntry: for a kind of the built-in schema, a verdict of in
// sync holds for a later resourceVersion with the same applied entry (a
// Pod whose status moved on) without the field sets computed again; for a
// kind typed by deduction it holds for that resourceVersion only.
func TestMemoKeyedByEntry(t *testing.T) {
	a := &Applier{}
	for _, c := range []struct {
		name    string
		obj     *unstructured.Unstructured
		byEntry bool
	}{
		{"built-in kind", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "labels": map[string]any{"app": "x"}},
			"data":     map[string]any{"a": "1"},
		}}, true},
		{"deduced kind", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns"},
			"spec":     map[string]any{"size": int64(1)},
		}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			live, hash := liveOf(t, a, c.obj, "1")
			p, err := a.plan(c.obj, live)
			if err != nil || p.why != "" {
				t.Fatalf("plan = %q, %v; want in sync", p.why, err)
			}
			later := live.DeepCopy()
			later.SetResourceVersion("2")
			later.Object["status"] = map[string]any{"phase": "Running"}
			k, ok := keyOf(hash, later, c.byEntry, a.fieldManager())
			if !ok {
				t.Fatal("no memo key for the later state")
			}
			if got := a.memo.has(k); got != c.byEntry {
				t.Fatalf("memo has the later state = %v, want %v", got, c.byEntry)
			}
			if p, err := a.plan(c.obj, later); err != nil || p.why != "" {
				t.Fatalf("plan of the later state = %q, %v; want in sync", p.why, err)
			}
		})
	}
}
