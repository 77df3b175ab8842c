package diff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestUnified(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	b := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\n"
	got := Unified("x", "y", a, b)
	want := "--- x\n+++ y\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n@@ -9,3 +9,4 @@\n i\n j\n k\n+l\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if Unified("x", "y", a, a) != "" {
		t.Error("equal texts: want no diff")
	}
	if got := Unified("x", "y", "", "a\n"); got != "--- x\n+++ y\n@@ -0,0 +1 @@\n+a\n" {
		t.Errorf("from nothing: got\n%s", got)
	}
}

// TestViewKeepsOwnedFields: a view keeps the fields the manager applied
// (list items matched by key, with their key fields) and drops the server's.
func TestViewKeepsOwnedFields(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7",
			"annotations": map[string]any{"cueop.dev/applied-hash": "h", "other": "x"},
			"labels":      map[string]any{"app": "a"},
			"managedFields": []any{map[string]any{
				"manager": "cueop", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
				"fieldsV1": `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`,
			}},
		},
		"spec": map[string]any{
			"clusterIP": "10.0.0.1",
			"ports":     []any{map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(80)}},
		},
		"status": map[string]any{"loadBalancer": map[string]any{}},
	}}
	got := toYAML(view(o, ownedBy(o, "cueop")))
	want := `apiVersion: v1
kind: Service
metadata:
  labels:
    app: a
  name: s
  namespace: ns
spec:
  ports:
  - port: 80
    protocol: TCP
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if all := toYAML(view(o, nil)); strings.Contains(all, "resourceVersion") || strings.Contains(all, "applied-hash") || !strings.Contains(all, "clusterIP") {
		t.Errorf("a view of everything: want server-set metadata and the hash out, the rest in:\n%s", all)
	}
}
