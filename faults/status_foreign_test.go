package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestForeignStatusLeftToItsOwner: cueop must neither copy nor compare
// status fields and conditions it does not set. Today (engine/reconcile
// status.go desiredStatus/sameStatus) it (1) re-applies every old status
// field when a CR stalls, taking co-ownership of another manager's field,
// whose owner then gets a 409 Conflict; (2) re-applies other managers'
// conditions, so their owner cannot remove them; (3) writes the status once
// per foreign status change.
func TestForeignStatusLeftToItsOwner(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	e := sharedEnv(t)
	dir := copyTemplates(t)
	addSharedStatusKind(t, dir)
	cfg, ct := testkit.CountRequests(e.cfg)
	act := startOperator(t, e, dir, ns, cfg)
	e.waitCRD(t, sharedGVK)
	e.mustKubectl(t, "apiVersion: faults.example.com/v1\nkind: SharedStatus\nmetadata:\n  name: fs\n  namespace: "+ns+"\nspec:\n  replicas: 2\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return sharedReady(t, e, ns, map[string]int{"fs": 2}) })
	foreign := func(status map[string]any) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "faults.example.com/v1", "kind": "SharedStatus",
			"metadata": map[string]any{"name": "fs", "namespace": ns}, "status": status}}
		return e.c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("status-writer"))
	}
	backup := map[string]any{"type": "example.com/Backup", "status": "True", "reason": "Done", "message": "backed up", "lastTransitionTime": "2026-01-01T00:00:00Z"}
	act.Settled(t, 0, 2*time.Minute)
	n0, r0 := ct.WriteCount(), act.ReconcilesOf("name", "fs")
	if err := foreign(map[string]any{"note": "one", "conditions": []any{backup}}); err != nil {
		t.Fatal(err)
	}
	// The change's event reconciles the CR; once the operator settled after
	// it, whatever that reconcile would write is written.
	eventually(t, 60*time.Second, func() string {
		if act.ReconcilesOf("name", "fs") == r0 {
			return "no reconcile after the foreign status change"
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	if w := testkit.Strings(ct.Writes(n0)); len(w) != 0 {
		t.Errorf("cueop wrote %v after a foreign status change of a converged CR, want nothing", w)
	}

	// A status write of cueop (scale), then a stall.
	e.mustKubectl(t, "", "-n", ns, "scale", "sharedstatus/fs", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return sharedReady(t, e, ns, map[string]int{"fs": 3}) })
	e.mustKubectl(t, "", "-n", ns, "patch", "sharedstatus/fs", "--type=merge", "-p", `{"spec":{"minReady":5}}`)
	eventually(t, 60*time.Second, func() string {
		if s := conditionStatus(e.mustGet(t, sharedGVK, ns, "fs"), "Stalled"); s != "True" {
			return "Stalled=" + s
		}
		return ""
	})
	cr := e.mustGet(t, sharedGVK, ns, "fs")
	if got := strings.Join(statusOwners(cr)["cueop"], ","); strings.Contains(got, "note") {
		t.Errorf("cueop took co-ownership of status.note: owns %s", got)
	}
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager == "cueop" && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "example.com/Backup") {
			t.Errorf("cueop took co-ownership of the example.com/Backup condition")
		}
	}
	// The owner changes its field and removes its condition, unforced.
	r0 = act.ReconcilesOf("name", "fs")
	if err := foreign(map[string]any{"note": "two"}); err != nil {
		t.Errorf("the owner of status.note cannot change it any more: %v", err)
	}
	// The stalled CR is reconciled on the change and must not put the
	// removed condition back.
	eventually(t, 60*time.Second, func() string {
		if act.ReconcilesOf("name", "fs") == r0 {
			return "no reconcile after the foreign status change"
		}
		return ""
	})
	act.Settled(t, 0, 2*time.Minute)
	cr = e.mustGet(t, sharedGVK, ns, "fs")
	if c := condition(cr, "example.com/Backup"); c != nil {
		t.Errorf("the example.com/Backup condition survived its owner's removal: %v", c)
	}
}
