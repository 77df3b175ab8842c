package operator_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// vaultTemplate is a RedisCluster-like kind: spec.replicas Pods (default
// 3) of a cluster, the replicas as a printer column and the scale
// subresource's spec path.
const vaultTemplate = `package vault

import "list"

resource: {
	group:   "schemaguard.example.com"
	version: "v1"
	kind:    "Vault"
	printerColumns: [{name: "Replicas", type: "integer", jsonPath: ".spec.replicas"}]
	scale: {specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.pods"}
}

// #Spec is what a user asks for.
#Spec: {
	// Number of Pods.
	replicas: *3 | int & >=1 & <=100
}

#Status: pods: int & >=0

parent: {metadata: name: string, spec: #Spec}
observed: [string]: {...}

children: {
	for i in list.Range(0, parent.spec.replicas, 1) {
		"pod-\(i)": {
			apiVersion: "v1"
			kind:       "Pod"
			metadata: {name: "\(parent.metadata.name)-\(i)", labels: cluster: parent.metadata.name}
			spec: containers: [{name: "redis", image: "redis:7.0"}]
		}
	}
}

status: #Status & {pods: len(observed)}
`

const (
	vaultCRD        = "vaults.schemaguard.example.com"
	vaultAPIVersion = "schemaguard.example.com/v1"
)

// renameReplicas renames spec.replicas to spec.size everywhere the
// template names it, so that the template itself stays valid.
func renameReplicas(src string) string {
	return strings.NewReplacer(".spec.replicas", ".spec.size", "replicas: *3", "size: *3").Replace(src)
}

// startVault serves the Vault kind in ns on a templates directory of its
// own, and deletes the Vault CRD at the test's end, once the operator has
// stopped. It returns the template's file.
func startVault(t *testing.T, ns string) (*operatortest.Activity, string) {
	t.Helper()
	clustertest.DeleteCRDsAtEnd(t, vaultCRD)
	dir := kindsDir(t, map[string]string{"vault": vaultTemplate})
	a := startOperator(t, dir, ns, nil)
	clustertest.WaitEstablished(t, 60*time.Second, vaultCRD)
	return a, filepath.Join(dir, "vault", "vault.cue")
}

func applyVault(t *testing.T, ns, name, spec string) {
	t.Helper()
	mustKubectl(t, fmt.Sprintf("apiVersion: %s\nkind: Vault\nmetadata: {name: %s, namespace: %s}\nspec: %s\n", vaultAPIVersion, name, ns, spec), "apply", "-f", "-")
}

// vaultSchema is the spec schema the Vault CRD serves, as JSON.
func vaultSchema(t *testing.T) string {
	return mustKubectl(t, "", "get", "crd", vaultCRD, "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec}")
}

// podsOf says why cluster has not exactly n live Pods in ns, or "", with
// the Vault's status when it is one.
func podsOf(t *testing.T, ns, cluster string, n int) string {
	if got := len(listPods(t, newClient(t), ns, cluster)); got != n {
		status, _ := kubectl(t, "", "-n", ns, "get", "vault/"+cluster, "-o",
			`jsonpath={.metadata.generation} {.status.observedGeneration} {.status.revision} {range .status.conditions[*]}{.type}={.status} {.reason}: {.message}; {end}`)
		return fmt.Sprintf("%d Pods of %s, want %d (status: %s)", got, cluster, n, strings.TrimSpace(status))
	}
	return ""
}

// TestSchemaRenameRefused is the second day of a platform team: a CR
// stored with replicas: 5, then the template renames replicas to size.
// The new revision is refused, the CRD is left as it is, the CR keeps its
// 5 Pods through a label edit, and putting the template back clears the
// refusal.
func TestSchemaRenameRefused(t *testing.T) {
	ns := clustertest.Namespace(t)
	a, file := startVault(t, ns)
	c := newClient(t)
	applyVault(t, ns, "r5", "{replicas: 5}")
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "r5", 5) })
	schema, uids := vaultSchema(t), podUIDs(t, c, ns, "r5")
	loadErrors := metricSum(t, "cueop_template_load_errors_total")

	editFile(t, file, renameReplicas)
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, vaultCRD, "TemplateError", "v1 spec.replicas -> spec.size: renamed (at ", "vault.cue:16:2): set in 1 of 1 stored CR",
			"keeps serving", "way forward")
	})
	if got := metricSum(t, "cueop_template_refused", "kind", "Vault"); got != 1 {
		t.Errorf("cueop_template_refused = %v, want 1", got)
	}
	if got := metricSum(t, "cueop_template_load_errors_total"); got <= loadErrors {
		t.Errorf("cueop_template_load_errors_total = %v, want more than %v", got, loadErrors)
	}
	if got := vaultSchema(t); got != schema {
		t.Errorf("the CRD changed:\n%s\nwas:\n%s", got, schema)
	}
	if got := mustKubectl(t, "", "-n", ns, "get", "vault", "r5", "-o", "jsonpath={.spec}"); got != `{"replicas":5}` {
		t.Errorf("r5 reads spec %s, want replicas 5", got)
	}

	// A label edit makes the operator reconcile r5, with the revision that
	// keeps serving: nothing changes.
	r5 := getObj(t, c, vaultAPIVersion, "Vault", ns, "r5")
	before := a.ReconcilesOf("namespace", ns, "name", "r5")
	mustKubectl(t, "", "-n", ns, "label", "vault/r5", "edited=yes")
	eventually(t, 60*time.Second, func() string {
		if why := a.Caught(c, r5); why != "" {
			return why
		}
		if a.ReconcilesOf("namespace", ns, "name", "r5") == before {
			return "no reconcile of r5 ended since the label edit"
		}
		return ""
	})
	a.Settled(t, 0, 60*time.Second)
	if got := podUIDs(t, c, ns, "r5"); got != uids {
		t.Errorf("Pods of r5 changed after the label edit:\n%s\nwere:\n%s", got, uids)
	}
	// A spec edit renders r5 anew, in a render worker, with the revision
	// that keeps serving, though the files on disk are the refused one.
	mustKubectl(t, "", "-n", ns, "patch", "vault", "r5", "--type=merge", "-p", `{"spec":{"replicas":4}}`)
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "r5", 4) })
	a.Settled(t, 0, 60*time.Second)
	uids = podUIDs(t, c, ns, "r5")

	editFile(t, file, func(string) string { return vaultTemplate })
	eventually(t, 60*time.Second, func() string {
		if got := metricSum(t, "cueop_template_refused", "kind", "Vault"); got != 0 {
			return fmt.Sprintf("cueop_template_refused = %v after the template was put back", got)
		}
		return ""
	})
	if got := vaultSchema(t); got != schema {
		t.Errorf("the CRD changed:\n%s\nwas:\n%s", got, schema)
	}
	if got := podUIDs(t, c, ns, "r5"); got != uids {
		t.Errorf("Pods of r5 changed:\n%s\nwere:\n%s", got, uids)
	}
}

// TestSchemaBreakingChangeWithoutCRs: a kind with no stored CR takes a
// breaking change, with a warning Event on its CRD.
func TestSchemaBreakingChangeWithoutCRs(t *testing.T) {
	ns := clustertest.Namespace(t)
	_, file := startVault(t, ns)
	editFile(t, file, renameReplicas)
	eventually(t, 60*time.Second, func() string {
		if s := vaultSchema(t); !strings.Contains(s, `"size"`) || strings.Contains(s, `"replicas"`) {
			return "the CRD serves " + s
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, vaultCRD, "BreakingSchemaChange", "v1 spec.replicas -> spec.size: renamed", "set in 0 of 0 stored CRs")
	})
	applyVault(t, ns, "s2", "{size: 2}")
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "s2", 2) })
}

// TestSchemaSafeChangeWithCRs: a new optional field goes through while CRs
// are stored.
func TestSchemaSafeChangeWithCRs(t *testing.T) {
	ns := clustertest.Namespace(t)
	_, file := startVault(t, ns)
	applyVault(t, ns, "r2", "{replicas: 2}")
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "r2", 2) })
	editFile(t, file, func(s string) string {
		return strings.Replace(s, "replicas: *3 | int & >=1 & <=100\n", "replicas: *3 | int & >=1 & <=100\n\ttier?: string\n", 1)
	})
	eventually(t, 60*time.Second, func() string {
		if s := vaultSchema(t); !strings.Contains(s, `"tier"`) {
			return "the CRD serves " + s
		}
		return ""
	})
	applyVault(t, ns, "r2", "{replicas: 2, tier: cache}")
	if got := mustKubectl(t, "", "-n", ns, "get", "vault", "r2", "-o", "jsonpath={.spec.tier}"); got != "cache" {
		t.Errorf("r2 reads spec.tier %q, want cache", got)
	}
	if got := metricSum(t, "cueop_template_refused", "kind", "Vault"); got != 0 {
		t.Errorf("cueop_template_refused = %v, want 0", got)
	}
}

// TestSchemaRefusedAtStartKeepsRunning: an operator restarted on a
// template whose schema change is refused, its only kind, does not exit
// (a crash loop): it leaves the CRD and the CRs as they are, and serves
// the kind once the template is put back.
func TestSchemaRefusedAtStartKeepsRunning(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, vaultCRD)
	dir := kindsDir(t, map[string]string{"vault": vaultTemplate})
	file := filepath.Join(dir, "vault", "vault.cue")
	_, stop := startOperatorStoppable(t, dir, ns, nil)
	clustertest.WaitEstablished(t, 60*time.Second, vaultCRD)
	applyVault(t, ns, "r5", "{replicas: 5}")
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "r5", 5) })
	stop()
	schema := vaultSchema(t)

	editFile(t, file, renameReplicas)
	a, _ := startOperatorStoppable(t, dir, ns, nil) // its end reports an error it stopped with
	eventually(t, 60*time.Second, func() string {
		return crdEventOn(t, vaultCRD, "TemplateError", "v1 spec.replicas -> spec.size: renamed", "no revision of the kind serves yet")
	})
	if got := vaultSchema(t); got != schema {
		t.Errorf("the CRD changed:\n%s\nwas:\n%s", got, schema)
	}
	editFile(t, file, func(string) string { return vaultTemplate })
	eventually(t, 60*time.Second, func() string {
		for _, p := range a.Operator.Progress() {
			if p.Kind == "Vault" {
				return ""
			}
		}
		return "the operator does not serve Vault after the template was put back"
	})
	eventually(t, 60*time.Second, func() string { return podsOf(t, ns, "r5", 5) })
}
