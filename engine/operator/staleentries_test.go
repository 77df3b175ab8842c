package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/internal/testkit"
)

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
