package apply_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
)

// mustApply applies desired over the live object and checks the action.
func (e *env) mustApply(t *testing.T, a *apply.Applier, desired *unstructured.Unstructured, want apply.Action) *unstructured.Unstructured {
	t.Helper()
	got, err := a.Apply(context.Background(), desired, e.live(t, desired))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Apply = %s, want %s", got, want)
	}
	return e.live(t, desired)
}

// wantNeeds checks NeedsApply of desired against the live object.
func (e *env) wantNeeds(t *testing.T, a *apply.Applier, desired *unstructured.Unstructured, want bool) {
	t.Helper()
	needs, why, err := a.NeedsApply(desired, e.live(t, desired))
	if err != nil {
		t.Fatal(err)
	}
	if needs != want {
		t.Fatalf("NeedsApply = %v (%s), want %v", needs, why, want)
	}
	t.Logf("NeedsApply = %v %s", needs, why)
}

// fieldsAsText is a copy of live with every managedFields entry's fieldsV1
// as JSON text, as the operator's children cache keeps it.
func fieldsAsText(t *testing.T, live *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := live.DeepCopy()
	entries, _, _ := unstructured.NestedSlice(out.Object, "metadata", "managedFields")
	if len(entries) == 0 {
		t.Fatal("live object has no managedFields")
	}
	for _, e := range entries {
		entry := e.(map[string]any)
		b, err := json.Marshal(entry["fieldsV1"])
		if err != nil {
			t.Fatal(err)
		}
		entry["fieldsV1"] = string(b)
	}
	if err := unstructured.SetNestedSlice(out.Object, entries, "metadata", "managedFields"); err != nil {
		t.Fatal(err)
	}
	return out
}

func configMap(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{"app": "demo", "tier": "cache"}},
		"data": map[string]any{"a": "1", "b": "2"},
	}}
}

// TestUnchanged is the key test: an object read back after its apply needs
// no apply, and an unchanged Apply sends no request.
func TestUnchanged(t *testing.T) {
	e := newEnv(t)
	children := rendered(t, e.ns, "r")
	children["configmap"] = configMap(e.ns, "plain")
	a := &apply.Applier{Client: e.c}
	for id, desired := range children {
		t.Run(id, func(t *testing.T) {
			before := desired.DeepCopy()
			live := e.mustApply(t, a, desired, apply.Created)
			if !equal(before, desired) {
				t.Fatal("Apply modified desired")
			}
			logManagedFields(t, live)
			e.wantNeeds(t, a, desired, false)
			// The operator's cache keeps fieldsV1 as JSON text.
			if needs, why, err := a.NeedsApply(desired, fieldsAsText(t, live)); err != nil || needs {
				t.Fatalf("NeedsApply with fieldsV1 as text = %v (%s), %v; want false", needs, why, err)
			}
			n := e.requests.Len()
			if got, err := a.Apply(context.Background(), desired, live); err != nil || got != apply.Unchanged {
				t.Fatalf("Apply = %s, %v; want unchanged", got, err)
			}
			if sent := e.requests.Len() - n; sent != 0 {
				t.Fatalf("unchanged Apply sent %d requests", sent)
			}
		})
	}
}

func TestDesiredChange(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	e.mustApply(t, a, desired, apply.Created)

	desired.SetLabels(map[string]string{"app": "demo", "tier": "web"})
	e.wantNeeds(t, a, desired, true)
	live := e.live(t, desired)
	if needs, _, err := a.NeedsApply(desired, fieldsAsText(t, live)); err != nil || !needs {
		t.Fatalf("NeedsApply with fieldsV1 as text = %v, %v; want true", needs, err)
	}
	n := e.requests.Len()
	if got, err := a.Apply(context.Background(), desired, live); err != nil || got != apply.Updated {
		t.Fatalf("Apply = %s, %v; want updated", got, err)
	}
	if sent := e.requests.Len() - n; sent != 1 {
		t.Fatalf("Apply of a change sent %d requests, want 1", sent)
	}
	live = e.live(t, desired)
	if got := live.GetLabels()["tier"]; got != "web" {
		t.Fatalf("label tier = %q", got)
	}
	e.wantNeeds(t, a, desired, false)

	// A field the template stops setting is removed by the next apply.
	unstructured.RemoveNestedField(desired.Object, "data", "b")
	e.wantNeeds(t, a, desired, true)
	live = e.mustApply(t, a, desired, apply.Updated)
	if _, found, _ := unstructured.NestedString(live.Object, "data", "b"); found {
		t.Fatal("data.b survived its removal from desired")
	}
	e.wantNeeds(t, a, desired, false)
}

// TestForeignUpdate edits a field cueop set with an update under another
// manager, as kubectl edit does.
func TestForeignUpdate(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	e.mustApply(t, a, desired, apply.Created)

	e.edit(t, desired, func(live *unstructured.Unstructured) {
		live.SetLabels(map[string]string{"app": "demo", "tier": "edited"})
	})
	e.wantNeeds(t, a, desired, true)
	live := e.mustApply(t, a, desired, apply.Updated)
	if got := live.GetLabels()["tier"]; got != "cache" {
		t.Fatalf("label tier = %q after apply, want it restored", got)
	}
	e.wantNeeds(t, a, desired, false)

	// Removing a field cueop set.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		unstructured.RemoveNestedField(live.Object, "data", "a")
	})
	e.wantNeeds(t, a, desired, true)
	live = e.mustApply(t, a, desired, apply.Updated)
	if got, _, _ := unstructured.NestedString(live.Object, "data", "a"); got != "1" {
		t.Fatalf("data.a = %q after apply, want it restored", got)
	}
	e.wantNeeds(t, a, desired, false)
}

// TestForeignForceApply takes a field from cueop with another manager's
// server-side apply, as kubectl apply --server-side --force-conflicts does.
func TestForeignForceApply(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	e.mustApply(t, a, desired, apply.Created)

	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": e.ns},
		"data":     map[string]any{"a": "taken"},
	}}
	err := e.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(other),
		client.FieldOwner("kubectl"), client.ForceOwnership)
	if err != nil {
		t.Fatal(err)
	}
	e.wantNeeds(t, a, desired, true)
	live := e.mustApply(t, a, desired, apply.Updated)
	if got, _, _ := unstructured.NestedString(live.Object, "data", "a"); got != "1" {
		t.Fatalf("data.a = %q after apply, want it restored", got)
	}
	e.wantNeeds(t, a, desired, false)
}

// TestForeignUnrelated adds fields cueop does not set: they are left alone.
func TestForeignUnrelated(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := rendered(t, e.ns, "r")["pod-0"]
	e.mustApply(t, a, desired, apply.Created)

	e.edit(t, desired, func(live *unstructured.Unstructured) {
		labels, ann := live.GetLabels(), live.GetAnnotations()
		labels["team"] = "storage"
		ann["note"] = "hi"
		live.SetLabels(labels)
		live.SetAnnotations(ann)
	})
	e.wantNeeds(t, a, desired, false)

	// Another applier sharing a field with the same value takes nothing away.
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": desired.GetName(), "namespace": e.ns,
			"labels": map[string]any{"app": "redis"}},
	}}
	err := e.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("other"))
	if err != nil {
		t.Fatal(err)
	}
	e.wantNeeds(t, a, desired, false)
}

// TestDeleted: a child missing from the cache is created again.
func TestDeleted(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	live := e.mustApply(t, a, desired, apply.Created)
	if err := e.c.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	e.wantNeeds(t, a, desired, true)
	e.mustApply(t, a, desired, apply.Created)
}

func TestPodImageInPlace(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := rendered(t, e.ns, "r")["pod-0"]
	before := e.mustApply(t, a, desired, apply.Created)

	setContainer(t, desired, "image", "redis:7.2")
	after := e.mustApply(t, a, desired, apply.Updated)
	if after.GetUID() != before.GetUID() {
		t.Fatal("an image change recreated the Pod")
	}
	if got := container(t, after)["image"]; got != "redis:7.2" {
		t.Fatalf("image = %v", got)
	}
	e.wantNeeds(t, a, desired, false)
}

func TestPodImmutable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, pod *unstructured.Unstructured)
	}{
		{"args", func(t *testing.T, pod *unstructured.Unstructured) {
			setContainer(t, pod, "args", []any{"/etc/redis/redis.conf", "--port", "6380"})
		}},
		{"volume", func(t *testing.T, pod *unstructured.Unstructured) {
			vols, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
			vols = append(vols, map[string]any{"name": "data", "emptyDir": map[string]any{}})
			if err := unstructured.SetNestedSlice(pod.Object, vols, "spec", "volumes"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a := &apply.Applier{Client: e.c}
			desired := rendered(t, e.ns, "r")["pod-0"]
			before := e.mustApply(t, a, desired, apply.Created)

			tc.change(t, desired)
			_, err := a.Apply(context.Background(), desired, before)
			if !apply.IsImmutable(err) {
				t.Fatalf("Apply error %v: IsImmutable false", err)
			}
			t.Logf("apply error: %v", err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.Recreate(ctx, desired, before); err != nil {
				t.Fatal(err)
			}
			after := e.live(t, desired)
			if after == nil || after.GetUID() == before.GetUID() {
				t.Fatal("Recreate did not replace the Pod")
			}
			e.wantNeeds(t, a, desired, false)
		})
	}
}

func TestIsImmutable(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	svc := rendered(t, e.ns, "r")["service"]
	live := e.mustApply(t, a, svc, apply.Created)
	ip, _, _ := unstructured.NestedString(live.Object, "spec", "clusterIP")
	if err := unstructured.SetNestedField(svc.Object, otherIP(ip), "spec", "clusterIP"); err != nil {
		t.Fatal(err)
	}
	_, err := a.Apply(context.Background(), svc, live)
	if !apply.IsImmutable(err) {
		t.Fatalf("Service clusterIP change: %v: IsImmutable false", err)
	}
	// An error of another kind is not immutable.
	bad := configMap(e.ns, "Not_A_Name")
	_, err = a.Apply(context.Background(), bad, nil)
	if err == nil || apply.IsImmutable(err) {
		t.Fatalf("invalid name: %v: IsImmutable true", err)
	}
}

func TestPrune(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	live := e.mustApply(t, a, desired, apply.Created)
	ctx := context.Background()
	if err := a.Prune(ctx, live); err != nil {
		t.Fatal(err)
	}
	if e.live(t, desired) != nil {
		t.Fatal("pruned object still exists")
	}
	if err := a.Prune(ctx, live); err != nil {
		t.Fatalf("prune of a missing object: %v", err)
	}
	// A stale live object never deletes the one that replaced it.
	e.mustApply(t, a, desired, apply.Created)
	if err := a.Prune(ctx, live); err != nil {
		t.Fatalf("prune with a stale uid: %v", err)
	}
	if e.live(t, desired) == nil {
		t.Fatal("prune with a stale uid deleted the new object")
	}
}

func equal(a, b *unstructured.Unstructured) bool {
	x, _ := yaml.Marshal(a.Object)
	y, _ := yaml.Marshal(b.Object)
	return string(x) == string(y)
}

func logManagedFields(t *testing.T, live *unstructured.Unstructured) {
	b, _ := yaml.Marshal(live.GetManagedFields())
	t.Logf("managedFields of %s:\n%s", live.GetName(), b)
}

func container(t *testing.T, pod *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	if len(cs) == 0 {
		t.Fatal("no containers")
	}
	return cs[0].(map[string]any)
}

// setContainer sets a field of desired's first container without touching
// the maps desired shares with anything else.
func setContainer(t *testing.T, pod *unstructured.Unstructured, field string, v any) {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	cs[0].(map[string]any)[field] = v
	if err := unstructured.SetNestedSlice(pod.Object, cs, "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

func otherIP(ip string) string {
	if ip == "10.96.0.99" {
		return "10.96.0.98"
	}
	return "10.96.0.99"
}

// TestNoManagedFields: a live object without the applier's managedFields
// entry (a cache that strips them, or another writer that cleared them)
// needs an apply, which brings the entry back.
func TestNoManagedFields(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	desired := configMap(e.ns, "cm")
	live := e.mustApply(t, a, desired, apply.Created)
	stripped := live.DeepCopy()
	stripped.SetManagedFields(nil)
	if needs, why, err := a.NeedsApply(desired, stripped); err != nil || !needs {
		t.Fatalf("NeedsApply without managedFields = %v (%s), %v", needs, why, err)
	}
	// Another writer resets managedFields on the server (a list of one empty
	// entry): cueop's entry is gone.
	e.edit(t, desired, func(live *unstructured.Unstructured) {
		live.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
	})
	e.wantNeeds(t, a, desired, true)
	e.mustApply(t, a, desired, apply.Updated)
	e.wantNeeds(t, a, desired, false)

	// Another field manager name sees its own (missing) fields.
	other := &apply.Applier{Client: e.c, FieldManager: "someone-else"}
	e.wantNeeds(t, other, desired, true)
}
