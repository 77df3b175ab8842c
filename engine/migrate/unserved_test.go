package migrate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUnservedFields: of a CR read at v2, only the entry at v1, not
// served, moves to v2 (merged into its manager's entry there); the entry
// at v3, served, is kept as it is; with no entry at a version not served,
// the entries are returned as they are.
func TestUnservedFields(t *testing.T) {
	const v1, v2, v3 = "cache.example.com/v1", "cache.example.com/v2", "cache.example.com/v3"
	obj := map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "cache", "zone": "a"}}}
	entry := func(manager, version, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: version,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	mfs := []metav1.ManagedFieldsEntry{
		entry("kubectl-label", v2, `{"f:metadata":{"f:labels":{"f:zone":{}}}}`),
		entry("kubectl-label", v1, `{"f:metadata":{"f:labels":{"f:tier":{}}}}`),
		entry("other", v3, `{"f:metadata":{"f:labels":{"f:tier":{}}}}`),
	}
	served := func(v string) bool { return v != v1 }
	out, stale := UnservedFields(obj, mfs, v2, served)
	if !stale || len(out) != 2 {
		t.Fatalf("UnservedFields = %+v, %v; want 2 entries, stale", out, stale)
	}
	if out[0].Manager != "kubectl-label" || out[0].APIVersion != v2 ||
		string(out[0].FieldsV1.Raw) != `{"f:metadata":{"f:labels":{"f:tier":{},"f:zone":{}}}}` {
		t.Errorf("entry of kubectl-label = %s at %s, want tier and zone at v2", out[0].FieldsV1.Raw, out[0].APIVersion)
	}
	if out[1].Manager != "other" || out[1].APIVersion != v3 || string(out[1].FieldsV1.Raw) != string(mfs[2].FieldsV1.Raw) {
		t.Errorf("entry at v3 = %+v, want it kept as it is", out[1])
	}
	if out, stale := UnservedFields(obj, mfs[2:], v2, served); stale || len(out) != 1 || out[0].APIVersion != v3 {
		t.Errorf("UnservedFields with no entry at v1 = %+v, %v; want the entries as they are", out, stale)
	}
}
