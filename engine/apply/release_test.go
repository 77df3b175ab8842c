package apply_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
)

const ownerUID = types.UID("0b0c4a3e-5b8f-4c0e-9a55-7f1e7a1b2c3d") // the parent of rendered

var releaseKeys = []string{"app.kubernetes.io/managed-by", "cueop.dev/owner-uid", "cueop.dev/id", wellknown.AnnotationAppliedHash}

// TestReleaseDropsOwnership releases an applied child that another manager
// also wrote to: the object stays with its data and the other manager's
// fields, without cueop's owner reference, labels, annotations or
// managedFields entry, and another manager may apply cueop's fields
// without a conflict. A second release from the stale object succeeds.
func TestReleaseDropsOwnership(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	cm := rendered(t, e.ns, "rel")["config"]
	e.mustApply(t, a, cm, apply.Created)
	e.edit(t, cm, func(live *unstructured.Unstructured) {
		live.SetLabels(merge(live.GetLabels(), map[string]string{"team": "payments"}))
	})
	stale := e.live(t, cm)
	mark := map[string]string{"cueop.dev/released-from": "RedisCluster ns/rel"}
	if err := a.Release(context.Background(), stale, ownerUID, releaseKeys, mark); err != nil {
		t.Fatal(err)
	}
	got := e.live(t, cm)
	if refs := got.GetOwnerReferences(); len(refs) != 0 {
		t.Errorf("owner references %v remain", refs)
	}
	if l := got.GetLabels(); l["team"] != "payments" || l["app"] != "redis" || l["cueop.dev/id"] != "" || l["app.kubernetes.io/managed-by"] != "" {
		t.Errorf("labels %v: want the template's and the team's, not cueop's", l)
	}
	if ann := got.GetAnnotations(); ann[wellknown.AnnotationAppliedHash] != "" || ann["cueop.dev/released-from"] != "RedisCluster ns/rel" {
		t.Errorf("annotations %v: want released-from alone of cueop's", ann)
	}
	if conf, _, _ := unstructured.NestedString(got.Object, "data", "redis.conf"); !strings.Contains(conf, "port") {
		t.Errorf("data lost: %v", got.Object["data"])
	}
	for _, m := range got.GetManagedFields() {
		if m.Manager == apply.DefaultFieldManager {
			t.Errorf("cueop's managedFields entry remains (%s)", m.Operation)
		}
	}
	if err := a.Release(context.Background(), stale, ownerUID, releaseKeys, mark); err != nil {
		t.Errorf("second release from a stale object: %v", err)
	}
	mine := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": cm.GetName(), "namespace": e.ns},
		"data": map[string]any{"redis.conf": "port 1\n"},
	}}
	if err := e.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(mine), client.FieldOwner("someone")); err != nil {
		t.Errorf("another manager's apply of a released object: %v", err)
	}
}

// TestReleaseLeavesReplacementAlone releases an object that was deleted and
// created again under its name: the new object is not touched.
func TestReleaseLeavesReplacementAlone(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	cm := rendered(t, e.ns, "repl")["config"]
	old := e.mustApply(t, a, cm, apply.Created)
	if err := e.c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	e.mustApply(t, a, cm, apply.Created)
	if err := a.Release(context.Background(), old, ownerUID, releaseKeys, nil); err == nil {
		t.Error("released the object that replaced the one asked")
	}
	if got := e.live(t, cm); len(got.GetOwnerReferences()) != 1 || got.GetLabels()["cueop.dev/id"] == "" {
		t.Errorf("the replacement lost cueop's owner reference or labels: %v", got.Object["metadata"])
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestApplyCreatesOnly: told a child is absent, Apply creates it where its
// name is free, and otherwise changes nothing (not even a field) and says
// so (ErrExists), whoever holds the name; DryRunCreate answers the same
// without writing, and Get reads the object that holds the name. A child
// created so needs no second apply.
func TestApplyCreatesOnly(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	ctx := context.Background()
	cm := configMap(e.ns, "taken")
	theirs := cm.DeepCopy()
	theirs.Object["data"] = map[string]any{"a": "theirs"}
	if err := e.c.Create(ctx, theirs, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	before := e.live(t, cm)
	if _, err := a.DryRunCreate(ctx, cm); !apply.IsExists(err) {
		t.Fatalf("DryRunCreate over an existing object: %v, want ErrExists", err)
	}
	if _, err := a.Apply(ctx, cm, nil); !apply.IsExists(err) || !strings.Contains(err.Error(), "ConfigMap "+e.ns+"/taken") {
		t.Fatalf("Apply(live nil) over an existing object: %v, want ErrExists naming it", err)
	}
	after := e.live(t, cm)
	if after.GetResourceVersion() != before.GetResourceVersion() || after.Object["data"].(map[string]any)["a"] != "theirs" {
		t.Fatalf("the existing object changed: resourceVersion %s -> %s, data %v", before.GetResourceVersion(), after.GetResourceVersion(), after.Object["data"])
	}
	got, err := a.Get(ctx, cm)
	if err != nil || got == nil || got.GetUID() != before.GetUID() {
		t.Fatalf("Get = %v, %v; want the existing object", got, err)
	}

	free := configMap(e.ns, "free")
	if _, err := a.DryRunCreate(ctx, free); err != nil {
		t.Fatalf("DryRunCreate of a free name: %v", err)
	}
	if got, err := a.Get(ctx, free); err != nil || got != nil {
		t.Fatalf("Get of a free name after a dry run = %v, %v; want nothing", got, err)
	}
	e.mustApply(t, a, free, apply.Created)
	e.wantNeeds(t, a, free, false)
}

// TestApplyOverOnlyTheObjectRead: ApplyOver writes over the object it was
// given as read, and over nothing else: an object changed since, or
// deleted and made again under its name, is refused (a Conflict) and left
// as it is; the object as read is applied over.
func TestApplyOverOnlyTheObjectRead(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	ctx := context.Background()
	cm := configMap(e.ns, "released")
	theirs := cm.DeepCopy()
	theirs.Object["data"] = map[string]any{"a": "theirs"}
	if err := e.c.Create(ctx, theirs, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	read, err := a.Get(ctx, cm)
	if err != nil || read == nil {
		t.Fatalf("Get = %v, %v", read, err)
	}
	refused := func(what string) {
		t.Helper()
		before := e.live(t, cm)
		if _, err := a.ApplyOver(ctx, cm, read); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "ConfigMap "+e.ns+"/released") {
			t.Fatalf("ApplyOver after %s: %v, want a Conflict naming the object", what, err)
		}
		after := e.live(t, cm)
		if after.GetResourceVersion() != before.GetResourceVersion() || after.Object["data"].(map[string]any)["a"] == "1" {
			t.Fatalf("after %s, the object changed: resourceVersion %s -> %s, data %v", what, before.GetResourceVersion(), after.GetResourceVersion(), after.Object["data"])
		}
	}
	e.edit(t, cm, func(live *unstructured.Unstructured) { live.Object["data"] = map[string]any{"a": "edited"} })
	refused("an edit")

	read = e.live(t, cm)
	if err := e.c.Delete(ctx, read); err != nil {
		t.Fatal(err)
	}
	again := configMap(e.ns, "released")
	again.Object["data"] = map[string]any{"a": "theirs"}
	if err := e.c.Create(ctx, again, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	refused("a delete and a create of the name")

	read = e.live(t, cm)
	if got, err := a.ApplyOver(ctx, cm, read); err != nil || got != apply.Updated {
		t.Fatalf("ApplyOver the object as read = %v, %v; want updated", got, err)
	}
	if after := e.live(t, cm); after.GetUID() != read.GetUID() || after.Object["data"].(map[string]any)["a"] != "1" {
		t.Fatalf("the object as read was not applied over: uid %s (read %s), data %v", after.GetUID(), read.GetUID(), after.Object["data"])
	}
	if _, err := a.ApplyOver(ctx, cm, nil); err == nil {
		t.Fatalf("ApplyOver nothing: no error")
	}
}
