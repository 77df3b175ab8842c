package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// TestMovedFields: the entries of a CR at v1 move to v2, each keeping the
// paths the CR holds at v2 (an annotation, a label, a field of the same
// name, a keyed list element) and losing the renamed fields; an entry left
// with none is dropped, and one of a manager that has an entry at v2
// already is merged into it.
func TestMovedFields(t *testing.T) {
	const v1, v2 = "cache.example.com/v1", "cache.example.com/v2"
	obj := map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{"tier": "cache"},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
		},
		"spec": map[string]any{"size": int64(3), "redisVersion": "7.0", "minReady": int64(1)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
		}},
	}
	early, late := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	entry := func(manager, op, version, sub string, at *metav1.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(op), APIVersion: version,
			Subresource: sub, Time: at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	mfs := []metav1.ManagedFieldsEntry{
		entry("kubectl-client-side-apply", "Update", v1, "", &early,
			`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:replicas":{},"f:version":{}}}`),
		entry("kubectl", "Update", v1, "scale", &early, `{"f:spec":{"f:replicas":{}}}`),
		entry("kubectl-patch", "Update", v1, "", &late, `{"f:spec":{"f:minReady":{}}}`),
		entry("kubectl-patch", "Update", v2, "", &early, `{"f:metadata":{"f:labels":{".":{},"f:tier":{}}}}`),
		entry("cueop", "Apply", v1, "status", &early,
			`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Gone\"}":{".":{}}},"f:readyReplicas":{}}}`),
		entry("broken", "Update", v1, "", &early, `{not json`),
	}
	got := MovedFields(obj, mfs, v2)
	want := []string{
		`kubectl-patch Update  {"f:metadata":{"f:labels":{".":{},"f:tier":{}}},"f:spec":{"f:minReady":{}}}`,
		`kubectl-client-side-apply Update  {"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{}}`,
		`cueop Apply status {"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}}}}`,
	}
	if len(got) != len(want) {
		t.Fatalf("MovedFields = %d entries, want %d: %s", len(got), len(want), text(t, got))
	}
	for i, e := range got {
		if e.APIVersion != v2 || e.FieldsType != "FieldsV1" {
			t.Errorf("entry %d at %s (%s), want %s", i, e.APIVersion, e.FieldsType, v2)
		}
		if s := e.Manager + " " + string(e.Operation) + " " + e.Subresource + " " + string(e.FieldsV1.Raw); s != want[i] {
			t.Errorf("entry %d = %s\nwant        %s", i, s, want[i])
		}
	}
	if got[0].Time == nil || !got[0].Time.Equal(&late) {
		t.Errorf("merged entry's time %v, want the later one %v", got[0].Time, late)
	}
	if StaleFields(got, v2) || !StaleFields(mfs, v2) {
		t.Error("StaleFields does not tell the moved entries from the ones at v1")
	}
}

func text(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMovedFieldsLongList: an entry naming each element of a long list
// (by key fields, by value) moves in time linear in the list, keeping the
// elements the CR has and losing the others, an integer key included.
func TestMovedFieldsLongList(t *testing.T) {
	const n = 8000
	items := make([]any, n)
	finalizers := make([]any, n)
	var b strings.Builder
	b.WriteString(`{"f:metadata":{"f:finalizers":{`)
	for i := range n {
		finalizers[i] = fmt.Sprintf("example.com/f%d", i)
		fmt.Fprintf(&b, `"v:\"example.com/f%d\"":{},`, i)
	}
	b.WriteString(`"v:\"example.com/gone\"":{}}},"f:spec":{"f:ports":{`)
	for i := range n {
		items[i] = map[string]any{"port": int64(i), "protocol": "TCP", "name": fmt.Sprintf("p%d", i)}
		fmt.Fprintf(&b, `"k:{\"port\":%d,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}},`, i)
	}
	b.WriteString(`"k:{\"port\":1,\"protocol\":\"UDP\"}":{".":{}}}}}`)
	obj := map[string]any{
		"metadata": map[string]any{"finalizers": finalizers},
		"spec":     map[string]any{"ports": items},
	}
	mfs := []metav1.ManagedFieldsEntry{{Manager: "tenant", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "example.com/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(b.String())}}}
	start := time.Now()
	got := MovedFields(obj, mfs, "example.com/v2")
	// Quadratic in the list, this took 20 s and more; linear, well under 1 s.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("MovedFields of %d list elements took %v", n, d)
	}
	if len(got) != 1 {
		t.Fatalf("MovedFields = %d entries, want 1", len(got))
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(got[0].FieldsV1.Raw)); err != nil {
		t.Fatal(err)
	}
	if want := n + 4*n; set.Size() != want { // each finalizer; each port and its 3 fields
		t.Errorf("moved entry has %d paths, want %d", set.Size(), want)
	}
	for _, s := range []string{`example.com/gone`, `UDP`} {
		if strings.Contains(string(got[0].FieldsV1.Raw), s) {
			t.Errorf("moved entry keeps %s, which the CR does not have", s)
		}
	}
}
