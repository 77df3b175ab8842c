package apply_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
)

// widgetCRD has what a deduced schema gets wrong: a list map whose items the
// server defaults, an atomic map and an atomic list.
var widgetCRD = testCRD("Widget", "widgets", `
              items:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    value: {type: string}
                    port: {type: integer, default: 80}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              args:
                type: array
                items: {type: string}
`)

// testCRD is the CRD of kind (plural) in group test.cueop.dev, served and
// stored at v1, whose spec has the properties given (YAML at the depth of
// the spec's properties).
func testCRD(kind, plural, properties string) string {
	return `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + plural + `.test.cueop.dev}
spec:
  group: test.cueop.dev
  scope: Namespaced
  names: {kind: ` + kind + `, plural: ` + plural + `, singular: ` + strings.ToLower(kind) + `, listKind: ` + kind + `List}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
` + properties
}

func installWidgetCRD(t *testing.T, c client.Client) {
	t.Helper()
	installCRD(t, c, widgetCRD, "test.cueop.dev/v1", "WidgetList")
}

// installCRD applies the CRD of crdYAML and waits until its list kind is
// served at apiVersion. The test CRDs stay for the package's other tests.
func installCRD(t *testing.T, c client.Client, crdYAML, apiVersion, listKind string) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(crdYAML), &crd.Object); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("test"), client.ForceOwnership)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(apiVersion)
		list.SetKind(listKind)
		return c.List(ctx, list, client.InNamespace("default")) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s %s not served: %v", apiVersion, listKind, err)
	}
}

func widget(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cueop.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "w"}},
		"spec": map[string]any{
			"items": []any{
				map[string]any{"name": "a", "value": "1"},
				map[string]any{"name": "b", "value": "2"},
			},
			"selector": map[string]any{"app": "w"},
			"args":     []any{"x", "y"},
		},
	}}
}

// TestCustomKind covers kinds with no built-in schema, whose field set is
// deduced from the object.
func TestCustomKind(t *testing.T) {
	e := newEnv(t)
	installWidgetCRD(t, e.c)
	a := &apply.Applier{Client: e.c}
	desired := widget(e.ns, "w")
	live := e.mustApply(t, a, desired, apply.Created)
	logManagedFields(t, live)
	e.wantNeeds(t, a, desired, false)

	// Another writer's list item and label are left alone.
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cueop.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": e.ns, "labels": map[string]any{"team": "t"}},
		"spec":     map[string]any{"items": []any{map[string]any{"name": "c", "value": "3"}}},
	}}
	ctx := context.Background()
	if err := e.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("other")); err != nil {
		t.Fatal(err)
	}
	e.wantNeeds(t, a, desired, false)

	// A value changed inside a list item is seen, and restored.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		items, _, _ := unstructured.NestedSlice(live.Object, "spec", "items")
		items[1].(map[string]any)["value"] = "edited"
		_ = unstructured.SetNestedSlice(live.Object, items, "spec", "items")
	})
	e.wantNeeds(t, a, desired, true)
	e.mustApply(t, a, desired, apply.Updated)
	e.wantNeeds(t, a, desired, false)

	// A list item removed by another writer is seen, and restored.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		items, _, _ := unstructured.NestedSlice(live.Object, "spec", "items")
		_ = unstructured.SetNestedSlice(live.Object, items[1:], "spec", "items")
	})
	e.wantNeeds(t, a, desired, true)
	e.mustApply(t, a, desired, apply.Updated)
	e.wantNeeds(t, a, desired, false)

	// An atomic map taken by another writer is seen.
	other = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cueop.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": e.ns},
		"spec":     map[string]any{"selector": map[string]any{"app": "w", "more": "x"}},
	}}
	err := e.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("other"), client.ForceOwnership)
	if err != nil {
		t.Fatal(err)
	}
	e.wantNeeds(t, a, desired, true)
	e.mustApply(t, a, desired, apply.Updated)
	e.wantNeeds(t, a, desired, false)
}
