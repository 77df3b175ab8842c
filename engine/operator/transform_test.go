package operator

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
)

// TestCompactChild checks the children cache's transform: only cueop's
// managedFields entry is kept, of an unstructured child with its fieldsV1
// as the JSON text of the decoded tree, of a typed child as is.
func TestCompactChild(t *testing.T) {
	fields := map[string]any{"f:spec": map[string]any{"f:size": map[string]any{}}}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "managedFields": []any{
			map[string]any{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:x": map[string]any{}}},
			map[string]any{"manager": apply.DefaultFieldManager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields},
		}},
	}}
	got, err := compactChild(u)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(got.(*unstructured.Unstructured).Object, "metadata", "managedFields")
	if len(entries) != 1 {
		t.Fatalf("kept %d entries, want cueop's only: %v", len(entries), entries)
	}
	entry := entries[0].(map[string]any)
	text, ok := entry["fieldsV1"].(string)
	if !ok || entry["manager"] != apply.DefaultFieldManager {
		t.Fatalf("kept entry %v, want cueop's with fieldsV1 as text", entry)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(text), &back); err != nil || len(back) != 1 || back["f:spec"] == nil {
		t.Fatalf("fieldsV1 text %q does not decode to the original tree (%v)", text, err)
	}
	// A second pass (the informer's relist) leaves the text alone.
	if again, err := compactChild(got); err != nil || again.(*unstructured.Unstructured).Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"] != text {
		t.Fatalf("second pass changed the entry (%v)", err)
	}

	// No entry of cueop's: none kept.
	other := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "o", "managedFields": []any{
		map[string]any{"manager": "kubectl", "fieldsV1": map[string]any{}},
	}}}}
	if _, err := compactChild(other); err != nil {
		t.Fatal(err)
	}
	if _, found := other.Object["metadata"].(map[string]any)["managedFields"]; found {
		t.Fatal("managedFields of other managers kept")
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubelet", Subresource: "status"},
		{Manager: apply.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}},
	}}}
	if _, err := compactChild(pod); err != nil {
		t.Fatal(err)
	}
	if mf := pod.GetManagedFields(); len(mf) != 1 || mf[0].Manager != apply.DefaultFieldManager || string(mf[0].FieldsV1.Raw) != `{"f:spec":{}}` {
		t.Fatalf("typed child kept %v", mf)
	}
}

// TestCompactParent checks the parents cache's transform: only cueop's
// status entry is kept, naming the top-level status fields and the
// condition types it owns, as the status writer reads them.
func TestCompactParent(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "managedFields": []any{
			map[string]any{"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}},
			map[string]any{"manager": "other", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:status": map[string]any{"f:foreign": map[string]any{}}}},
			map[string]any{"manager": apply.DefaultFieldManager, "operation": "Apply", "apiVersion": "cache.example.com/v1",
				"subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{
					"f:readyReplicas": map[string]any{},
					"f:conditions":    map[string]any{`k:{"type":"Ready"}`: map[string]any{".": map[string]any{}, "f:status": map[string]any{}}},
				}}},
		}},
	}}
	got, err := compactParent(cr)
	if err != nil {
		t.Fatal(err)
	}
	mf := got.(*unstructured.Unstructured).GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != apply.DefaultFieldManager || mf[0].Subresource != "status" || mf[0].APIVersion != "cache.example.com/v1" {
		t.Fatalf("kept %+v, want cueop's status entry only", mf)
	}
	var fields map[string]map[string]map[string]any
	if err := json.Unmarshal(mf[0].FieldsV1.Raw, &fields); err != nil {
		t.Fatal(err)
	}
	status := fields["f:status"]
	conds := status["f:conditions"]
	if len(status) != 2 || status["f:readyReplicas"] == nil || len(conds) != 1 || conds[`k:{"type":"Ready"}`] == nil {
		t.Fatalf("fieldsV1 = %s, want the two top-level status fields and the condition types, emptied", mf[0].FieldsV1.Raw)
	}
}
