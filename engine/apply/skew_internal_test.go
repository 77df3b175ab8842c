package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSchemaSkewNeedsNoSchema: a built-in kind with a field the compiled
// client-go schema does not know (as from a newer cluster) is no error for
// the no-op decision: with a live object stamped with the same hash, it
// needs the apply, whose resourceVersion decides (pure, no request).
func TestSchemaSkewNeedsNoSchema(t *testing.T) {
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns"},
		"spec": map[string]any{
			"containers":    []any{map[string]any{"name": "c", "image": "i"}},
			"futureFeature": map[string]any{"enabled": true},
		},
	}}
	stamped, _, err := stamp(pod)
	if err != nil {
		t.Fatal(err)
	}
	live := stamped.DeepCopy()
	live.SetUID("u1")
	live.SetResourceVersion("7")
	live.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
		"manager": DefaultFieldManager, "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
		"fieldsV1": `{"f:spec":{"f:futureFeature":{"f:enabled":{}}}}`,
	}}
	for _, c := range []struct {
		name     string
		live     *unstructured.Unstructured
		wantSkew bool
	}{
		{"absent", nil, false},
		{"present, same hash", live, true},
	} {
		a := &Applier{}
		p, err := a.plan(pod, c.live)
		if err != nil {
			t.Fatalf("%s: the no-op decision failed on a field the local schema does not know: %v", c.name, err)
		}
		if p.why == "" || p.skew != c.wantSkew {
			t.Fatalf("%s: why %q, skew %v; want an apply, skew %v", c.name, p.why, p.skew, c.wantSkew)
		}
		t.Logf("%s: %s", c.name, p.why)
		needs, _, err := a.NeedsApply(pod, c.live)
		if err != nil || !needs {
			t.Fatalf("%s: NeedsApply = %v, %v; want true: only the apply can tell", c.name, needs, err)
		}
	}
}
