package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// cachedConfigMap reads the ConfigMap of obj as the operator's cache holds
// it: typed (in protobuf), then unstructured with each managedFields
// entry's fieldsV1 as JSON text.
func cachedConfigMap(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), cm); err != nil {
		t.Fatal(err)
	}
	managed := cm.ManagedFields
	cm.ManagedFields = nil
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	if err != nil {
		t.Fatal(err)
	}
	entries := []any{}
	for _, e := range managed {
		entry := map[string]any{"manager": e.Manager, "operation": string(e.Operation), "apiVersion": e.APIVersion, "fieldsType": e.FieldsType}
		if e.Subresource != "" {
			entry["subresource"] = e.Subresource
		}
		if e.FieldsV1 != nil {
			entry["fieldsV1"] = string(e.FieldsV1.Raw)
		}
		entries = append(entries, entry)
	}
	m["metadata"].(map[string]any)["managedFields"] = entries
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	return u
}

// TestAnswerSeedsMemo: the answer to an apply (a create, an update) names
// the applied entry the API server recorded, and the memo takes the
// desired state as in sync with it at once: the next plan over the child
// as the cache holds it decides with a lookup. Another manager's take of a
// field changes the entry, and the plan compares the fields again.
func TestAnswerSeedsMemo(t *testing.T) {
	ctx := context.Background()
	ns := clustertest.Namespace(t)
	cfg := clustertest.Config()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	responses, err := NewMetadataResponses(cfg, nil, c.RESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	a := &Applier{Client: c, Responses: responses}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "seeded", "namespace": ns, "labels": map[string]any{"app": "demo"}},
		"data":     map[string]any{"a": "1"},
	}}
	seeded := func(want bool) *unstructured.Unstructured {
		t.Helper()
		live := cachedConfigMap(t, c, desired)
		_, hash, err := stamp(desired)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := keyOf(hash, live, true, a.fieldManager())
		if !ok || k.entry == "" {
			t.Fatalf("no memo key by entry for %v", live.Object["metadata"])
		}
		if got := a.memo.has(k); got != want {
			t.Fatalf("memo has the desired state against the live entry = %v, want %v", got, want)
		}
		return live
	}

	if act, err := a.Apply(ctx, desired, nil); err != nil || act != Created {
		t.Fatalf("create: %v, %v", act, err)
	}
	live := seeded(true)
	if p, err := a.plan(desired, live); err != nil || p.why != "" {
		t.Fatalf("plan after the create = %q, %v; want in sync", p.why, err)
	}

	desired.Object["data"] = map[string]any{"a": "2"}
	if act, err := a.Apply(ctx, desired, live); err != nil || act != Updated {
		t.Fatalf("update: %v, %v", act, err)
	}
	live = seeded(true)

	// Another manager changes a's value: it owns a now, cueop's entry no
	// longer holds it, and the plan sees the difference.
	live.Object["data"] = map[string]any{"a": "3"}
	edited := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "seeded", "namespace": ns, "resourceVersion": live.GetResourceVersion()},
		"data":     map[string]any{"a": "3"}}}
	if err := c.Patch(ctx, edited, client.Merge, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	live = seeded(false)
	if p, err := a.plan(desired, live); err != nil || p.why == "" {
		t.Fatalf("plan after another manager took a field = %q, %v; want a difference", p.why, err)
	}
}
