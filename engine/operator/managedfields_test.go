package operator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cueop/cueop/internal/testkit"
)

// TestDropVersionWrittenByKubectl walks "Evolving a kind" with a
// RedisCluster kubectl wrote at v1 (apply, scale, patch: managedFields
// entries at v1): the migration moves those entries to v2 with the CRs;
// one kubectl writes at v1 after the migration (a label) is counted by the
// guard, and moved before v1 stops being served; once v1 is dropped, a kubectl scale at v2 is
// followed by the status (observedGeneration and readyReplicas) within
// seconds, and the kubectl managers keep the fields v2 still has.
func TestDropVersionWrittenByKubectl(t *testing.T) {
	ns, dir := startRedisFleet(t)

	const v1 = "redisclusters.v1.cache.example.com"
	mustKubectl(t, redisYAML(ns, "sessions", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "sessions", 2) })
	mustKubectl(t, "", "-n", ns, "scale", v1+"/sessions", "--replicas=3")
	mustKubectl(t, "", "-n", ns, "patch", v1, "sessions", "--type=merge", "-p", `{"spec":{"minReady":1}}`)
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "sessions", 3) })
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) < 3 {
		t.Fatalf("managedFields entries at v1 after kubectl apply, scale and patch: %v, want 3 or more", at)
	}

	swapToVersionsStep(t, dir)
	eventually(t, 120*time.Second, func() string { return crdVersions(t, "v2", "v2,v1", "v2") })
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) > 0 {
		t.Errorf("managedFields entries left at v1 by the migration: %v", at)
	}
	// Written at v1 after the migration: moved when v1 stops being served.
	mustKubectl(t, "", "-n", ns, "label", v1, "sessions", "tier=cache")
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) != 1 {
		t.Errorf("managedFields entries at v1 after kubectl label at v1: %v, want 1", at)
	}
	k, withoutV1 := redisWithoutV1(t, dir)
	if r := guardCRD(t, redisCRD, k, withoutV1); r == nil ||
		// "1 of": other tests' CRs may linger in namespaces being deleted
		!strings.Contains(r.Error(), "v1: version served -> not served: managedFields entries at it in 1 of ") {
		t.Errorf("dropping v1 with an entry at v1: refusal %v, want one counting the CR", r)
	}

	testkit.Remove(t, dir, "rediscluster/v1.cue")
	eventually(t, 60*time.Second, func() string { return crdVersions(t, "v2", "v2", "v2") })
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) > 0 {
		t.Errorf("managedFields entries at v1 once v1 is not served: %v", at)
	}
	// The revision without v1 is written into the status, before any
	// write of the CR by kubectl: a status apply fails while an entry is
	// at v1 (an update by kubectl, failing the same way, would clear
	// every entry).
	if out, err := kubectl(t, "", "-n", ns, "wait", "rediscluster/sessions", "--timeout=30s", "--for=jsonpath={.status.revision}="+k.Revision); err != nil {
		events, _ := kubectl(t, "", "-n", ns, "get", "events", "--field-selector=involvedObject.name=sessions,reason=StatusWriteFailed", "-o", "jsonpath={.items[*].message}")
		t.Fatalf("status.revision not %s after v1 was dropped: %v: %s\nStatusWriteFailed Events: %s", k.Revision, err, out, events)
	}

	before := mustKubectl(t, "", "-n", ns, "get", "rediscluster", "sessions", "-o", "jsonpath={.metadata.generation}")
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/sessions", "--replicas=4")
	started := time.Now()
	gen := mustKubectl(t, "", "-n", ns, "get", "rediscluster", "sessions", "-o", "jsonpath={.metadata.generation}")
	if gen == before {
		t.Fatalf("generation %s unchanged by kubectl scale at v2", gen)
	}
	for _, cond := range []string{"jsonpath={.status.observedGeneration}=" + gen, "jsonpath={.status.readyReplicas}=4"} {
		if out, err := kubectl(t, "", "-n", ns, "wait", "rediscluster/sessions", "--timeout=30s", "--for="+cond); err != nil {
			status, _ := kubectl(t, "", "-n", ns, "get", "rediscluster", "sessions", "-o", "jsonpath={.status}")
			t.Fatalf("kubectl wait --for=%s: %v: %s\nstatus: %s", cond, err, out, status)
		}
	}
	t.Logf("status at the scaled generation %s, 4 ready, %.1fs after kubectl scale at v2", gen, time.Since(started).Seconds())
	eventually(t, 30*time.Second, func() string { return redisReadyAt(t, "v2", ns, "sessions", 4) })

	owned := fieldsOf(t, ns, "sessions")
	for manager, path := range map[string]string{"kubectl-patch": "f:spec.f:minReady", "kubectl-label": "f:metadata.f:labels.f:tier",
		"kubectl-client-side-apply": "f:metadata.f:annotations.f:kubectl.kubernetes.io/last-applied-configuration"} {
		if !strings.Contains(owned[manager], path) {
			t.Errorf("%s owns %q at v2, want %s kept", manager, owned[manager], path)
		}
	}
}

// managedFieldsOf reads the managedFields of the RedisCluster ns/name.
func managedFieldsOf(t *testing.T, ns, name string) []metav1.ManagedFieldsEntry {
	t.Helper()
	out := mustKubectl(t, "", "-n", ns, "get", "rediscluster", name, "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields}")
	var mfs []metav1.ManagedFieldsEntry
	must(t, json.Unmarshal([]byte(out), &mfs))
	return mfs
}

// fieldsAt names the managers of the RedisCluster ns/name with an entry
// at version.
func fieldsAt(t *testing.T, ns, name, version string) []string {
	t.Helper()
	var at []string
	for _, e := range managedFieldsOf(t, ns, name) {
		if e.APIVersion == "cache.example.com/"+version {
			at = append(at, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
		}
	}
	return at
}

// fieldsOf is, by manager, the field paths (dot-separated) each entry of
// the RedisCluster ns/name at v2 owns.
func fieldsOf(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	owned := map[string]string{}
	for _, e := range managedFieldsOf(t, ns, name) {
		if e.APIVersion != "cache.example.com/v2" || e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		must(t, json.Unmarshal(e.FieldsV1.Raw, &tree))
		owned[e.Manager] += " " + strings.Join(paths("", tree), " ")
	}
	return owned
}

func paths(prefix string, tree map[string]any) []string {
	var out []string
	for k, v := range tree {
		if k == "." {
			continue
		}
		p := strings.TrimPrefix(prefix+"."+k, ".")
		out = append(out, p)
		if sub, ok := v.(map[string]any); ok {
			out = append(out, paths(p, sub)...)
		}
	}
	return out
}

// TestUnservedEntryRepaired leaves a RedisCluster with a managedFields
// entry at v1 (kubectl label at v1 after the migration) when v1 stops
// being served by a CRD applied by hand, past the guard: the status write
// of the next revision, refused by the API server, moves that entry to v2
// (a ManagedFieldsRepaired Event) and is written; a kubectl scale at v2 is
// then followed by the status.
func TestUnservedEntryRepaired(t *testing.T) {
	ns, dir := startRedisFleet(t)

	const v1 = "redisclusters.v1.cache.example.com"
	mustKubectl(t, redisYAML(ns, "sessions", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v1", ns, "sessions", 2) })
	swapToVersionsStep(t, dir)
	eventually(t, 120*time.Second, func() string { return crdVersions(t, "v2", "v2,v1", "v2") })
	mustKubectl(t, "", "-n", ns, "label", v1, "sessions", "tier=cache")
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) != 1 {
		t.Fatalf("managedFields entries at v1 after kubectl label at v1: %v, want 1", at)
	}

	// v1 dropped by hand, then by the templates: no guard sees the drop.
	names := strings.Fields(mustKubectl(t, "", "get", "crd", redisCRD, "-o", "jsonpath={.spec.versions[*].name}"))
	i := 0
	for i < len(names) && names[i] != "v1" {
		i++
	}
	if i == len(names) {
		t.Fatalf("no v1 in the versions %v of %s", names, redisCRD)
	}
	mustKubectl(t, "", "patch", "crd", redisCRD, "--type=json", "-p",
		fmt.Sprintf(`[{"op":"test","path":"/spec/versions/%d/name","value":"v1"},{"op":"remove","path":"/spec/versions/%d"}]`, i, i))
	eventually(t, 30*time.Second, func() string { return crdVersions(t, "v2", "v2", "v2") })
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) != 1 {
		t.Fatalf("managedFields entries at v1 once v1 is dropped by hand: %v, want 1", at)
	}
	k, _ := redisWithoutV1(t, dir)
	testkit.Remove(t, dir, "rediscluster/v1.cue")
	if out, err := kubectl(t, "", "-n", ns, "wait", "rediscluster/sessions", "--timeout=60s", "--for=jsonpath={.status.revision}="+k.Revision); err != nil {
		events, _ := kubectl(t, "", "-n", ns, "get", "events", "--field-selector=involvedObject.name=sessions,reason=StatusWriteFailed", "-o", "jsonpath={.items[*].message}")
		t.Fatalf("status.revision not %s with an entry at v1 not served: %v: %s\nStatusWriteFailed Events: %s", k.Revision, err, out, events)
	}
	if at := fieldsAt(t, ns, "sessions", "v1"); len(at) > 0 {
		t.Errorf("managedFields entries at v1 once the status is written: %v", at)
	}
	if !strings.Contains(fieldsOf(t, ns, "sessions")["kubectl-label"], "f:metadata.f:labels.f:tier") {
		t.Errorf("kubectl-label owns %q at v2, want its label kept", fieldsOf(t, ns, "sessions")["kubectl-label"])
	}
	eventually(t, 30*time.Second, func() string {
		out, _ := kubectl(t, "", "-n", ns, "get", "events", "--field-selector=involvedObject.name=sessions,reason=ManagedFieldsRepaired", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(out, "moved to v2") {
			return "no ManagedFieldsRepaired Event on the CR: " + out
		}
		return ""
	})

	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/sessions", "--replicas=3")
	gen := mustKubectl(t, "", "-n", ns, "get", "rediscluster", "sessions", "-o", "jsonpath={.metadata.generation}")
	if out, err := kubectl(t, "", "-n", ns, "wait", "rediscluster/sessions", "--timeout=30s", "--for=jsonpath={.status.observedGeneration}="+gen); err != nil {
		t.Fatalf("status.observedGeneration not %s after kubectl scale at v2: %v: %s", gen, err, out)
	}
	eventually(t, 60*time.Second, func() string { return redisReadyAt(t, "v2", ns, "sessions", 3) })
}
