package apply_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/spec3"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// gizmoCRD is served with spec.size; the test adds spec.color, as a
// changed CRD does while the applier's TypeConverter still knows only the
// first schema.
var gizmoCRD = testCRD("Gizmo", "gizmos", "              size: {type: integer}\n")

// TestSchemaSkewAppliesAndSettles: with a TypeConverter that does not know
// a field the CRD gained, the applier sends the apply, reads the returned
// resourceVersion, reports Unchanged when the server changed nothing, and
// then sends nothing for the same live state: a CR is never left
// reconciling by it.
func TestSchemaSkewAppliesAndSettles(t *testing.T) {
	e := newEnv(t)
	applyCRD(t, e.c, gizmoCRD)
	tc := serverTypeConverter(t, "apis/test.cueop.dev/v1")
	applyCRD(t, e.c, strings.Replace(gizmoCRD, "size: {type: integer}", "size: {type: integer}\n              color: {type: string}", 1))

	a := &apply.Applier{Client: e.c, TypeConverter: tc}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cueop.dev/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "g", "namespace": e.ns},
		"spec":     map[string]any{"size": int64(2), "color": "red"},
	}}
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := a.Apply(ctx, desired, nil)
		return err == nil, nil // until the API server serves the new field
	})
	if err != nil {
		t.Fatalf("Gizmo with spec.color never applied: %v", err)
	}
	live := e.live(t, desired)
	if color, _, _ := unstructured.NestedString(live.Object, "spec", "color"); color != "red" {
		t.Fatalf("spec.color = %q: the server does not know the new field yet", color)
	}

	before := e.requests.Len()
	got, err := a.Apply(ctx, desired, live)
	if err != nil {
		t.Fatalf("Apply with a schema that cannot type the object: %v", err)
	}
	if got != apply.Unchanged {
		t.Fatalf("Apply over a live object in sync = %s, want %s", got, apply.Unchanged)
	}
	if sent := e.requests.Len() - before; sent != 1 {
		t.Fatalf("%d requests, want the one apply that decides", sent)
	}
	if rv := e.live(t, desired).GetResourceVersion(); rv != live.GetResourceVersion() {
		t.Fatalf("resourceVersion %s -> %s: the apply changed the object", live.GetResourceVersion(), rv)
	}
	before = e.requests.Len()
	if got, err := a.Apply(ctx, desired, live); err != nil || got != apply.Unchanged {
		t.Fatalf("second Apply = %s, %v; want unchanged", got, err)
	}
	if sent := e.requests.Len() - before; sent != 0 {
		t.Fatalf("%d requests for a live state already found in sync, want 0", sent)
	}

	// A real change is still applied, and reported.
	desired.Object["spec"].(map[string]any)["color"] = "blue"
	if got, err := a.Apply(ctx, desired, e.live(t, desired)); err != nil || got != apply.Updated {
		t.Fatalf("Apply of a new color = %s, %v; want updated", got, err)
	}
	if color, _, _ := unstructured.NestedString(e.live(t, desired).Object, "spec", "color"); color != "blue" {
		t.Fatalf("spec.color = %q, want blue", color)
	}
}

func applyCRD(t *testing.T, c client.Client, doc string) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &crd.Object); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("test"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("test.cueop.dev/v1")
		list.SetKind(crd.Object["spec"].(map[string]any)["names"].(map[string]any)["listKind"].(string))
		return c.List(ctx, list, client.InNamespace("default")) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not served: %v", crd.GetName(), err)
	}
}

// serverTypeConverter builds a TypeConverter from the API server's OpenAPI
// v3 document of one group version, as it is now.
func serverTypeConverter(t *testing.T, path string) managedfields.TypeConverter {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	var doc spec3.OpenAPI
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return false, nil
		}
		gv, ok := paths[path]
		if !ok {
			return false, nil
		}
		b, err := gv.Schema("application/json")
		if err != nil {
			return false, nil
		}
		return json.Unmarshal(b, &doc) == nil && doc.Components != nil && len(doc.Components.Schemas) > 0, nil
	})
	if err != nil {
		t.Fatalf("OpenAPI v3 of %s: %v", path, err)
	}
	tc, err := managedfields.NewTypeConverter(doc.Components.Schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}
