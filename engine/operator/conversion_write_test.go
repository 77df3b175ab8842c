package operator_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// restructuredTemplate is a kind whose hub v2 holds what its spoke v1
// holds in other shapes: a list where v1 has one element (backups,
// backup), a struct split in two (resources.requests and .limits, v1's
// resources) and a field renamed (instances, v1's replicas). Each backup
// is a ConfigMap. (backups has a default, so that a hub without backups
// and a v1 without a backup round-trip: the check at load refuses a
// conversion that loses a field it reads, on the specs generated from
// the CRD.)
const restructuredTemplate = `package pg

resource: {group: "restructure.example.com", version: "v2", kind: "PostgresCluster"}

#Backup: {schedule: string, retention: *7 | int & >=1}
#Res: {cpu: string, memory: string}
#Spec: {
	instances: *1 | int & >=1
	backups: *[] | [...#Backup]
	resources?: {requests: #Res, limits: #Res}
}

` + testkit.ParentObserved + `children: {
	for i, b in parent.spec.backups {
		"backup-\(i)": {
			apiVersion: "v1"
			kind:       "ConfigMap"
			metadata: name: "\(parent.metadata.name)-backup-\(i)"
			data: {schedule: b.schedule, retention: "\(b.retention)"}
		}
	}
}
ready: true
versions: v1: {
	#Spec: {
		replicas: *1 | int & >=1
		backup?: #Backup
		resources?: #Res
	}
	toHub: {in: spec: _, out: spec: {
		instances: in.spec.replicas
		if in.spec.backup != _|_ {backups: [in.spec.backup]}
		if in.spec.resources != _|_ {resources: {requests: in.spec.resources, limits: in.spec.resources}}
	}}
	fromHub: {in: spec: _, out: spec: {
		replicas: in.spec.instances
		if len(in.spec.backups) > 0 {backup: in.spec.backups[0]}
		if in.spec.resources != _|_ {resources: in.spec.resources.requests}
	}}
}
`

// TestWriteAtSpokeKeepsHubData: a PostgresCluster created at its hub v2
// with two backups and limits apart from its requests, patched at v1 (its
// one backup's retention, its resources' cpu, its replicas), keeps both
// backups, both ConfigMaps and the limits, and reads at v1 as written; a
// patch at v1 removing its backup, which would drop the second backup,
// is refused naming spec.backups and v2, and changes nothing.
func TestWriteAtSpokeKeepsHubData(t *testing.T) {
	const crd = "postgresclusters.restructure.example.com"
	ns := clustertest.Namespace(t)
	startConverting(t, ns, "pg", restructuredTemplate, crd)

	mustKubectl(t, `apiVersion: restructure.example.com/v2
kind: PostgresCluster
metadata: {name: two, namespace: `+ns+`}
spec:
  instances: 1
  backups: [{schedule: "0 1 * * *", retention: 7}, {schedule: "0 13 * * *", retention: 3}]
  resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "2", memory: 2Gi}}
`, "create", "-f", "-")
	backups := func() string {
		out, err := kubectl(t, "", "get", "configmaps", "-n", ns, "-o", `jsonpath={range .items[*]}{.metadata.name}={.data.retention} {end}`)
		if err != nil {
			return err.Error()
		}
		return strings.TrimSpace(out)
	}
	eventually(t, 60*time.Second, func() string {
		if got := backups(); !strings.Contains(got, "two-backup-0=7") || !strings.Contains(got, "two-backup-1=3") {
			return "backup ConfigMaps: " + got
		}
		return ""
	})

	const v1, v2 = "postgresclusters.v1.restructure.example.com", "postgresclusters.v2.restructure.example.com"
	hubSpec := func() string { return jsonText(mustGetAt(t, v2, ns, "two").Object["spec"]) }
	for _, patch := range []struct{ name, patch, want, atV1 string }{{
		name:  "list restructure",
		patch: `{"spec":{"backup":{"retention":2}}}`,
		want:  `"backups":[{"retention":2,"schedule":"0 1 * * *"},{"retention":3,"schedule":"0 13 * * *"}],"instances":1,"resources":{"limits":{"cpu":"2","memory":"2Gi"},"requests":{"cpu":"1","memory":"1Gi"}}`,
		atV1:  `{"backup":{"retention":2,"schedule":"0 1 * * *"},"replicas":1,"resources":{"cpu":"1","memory":"1Gi"}}`,
	}, {
		name:  "struct split",
		patch: `{"spec":{"resources":{"cpu":"500m"}}}`,
		want:  `"backups":[{"retention":2,"schedule":"0 1 * * *"},{"retention":3,"schedule":"0 13 * * *"}],"instances":1,"resources":{"limits":{"cpu":"2","memory":"2Gi"},"requests":{"cpu":"500m","memory":"1Gi"}}`,
		atV1:  `{"backup":{"retention":2,"schedule":"0 1 * * *"},"replicas":1,"resources":{"cpu":"500m","memory":"1Gi"}}`,
	}, {
		name:  "field rename",
		patch: `{"spec":{"replicas":3}}`,
		want:  `"backups":[{"retention":2,"schedule":"0 1 * * *"},{"retention":3,"schedule":"0 13 * * *"}],"instances":3,"resources":{"limits":{"cpu":"2","memory":"2Gi"},"requests":{"cpu":"500m","memory":"1Gi"}}`,
		atV1:  `{"backup":{"retention":2,"schedule":"0 1 * * *"},"replicas":3,"resources":{"cpu":"500m","memory":"1Gi"}}`,
	}} {
		mustKubectl(t, "", "patch", v1, "-n", ns, "two", "--type=merge", "-p", patch.patch)
		if got := hubSpec(); got != "{"+patch.want+"}" {
			t.Errorf("%s: the spec stored at v2 after a write at v1: %s\nwant {%s}", patch.name, got, patch.want)
		}
		if got := jsonText(mustGetAt(t, v1, ns, "two").Object["spec"]); got != patch.atV1 {
			t.Errorf("%s: read at v1 after the write: %s, want %s", patch.name, got, patch.atV1)
		}
	}
	eventually(t, 60*time.Second, func() string {
		if got := backups(); !strings.Contains(got, "two-backup-0=2") || !strings.Contains(got, "two-backup-1=3") {
			return "backup ConfigMaps after the writes at v1: " + got
		}
		return ""
	})

	before := mustGetAt(t, v2, ns, "two")
	out, err := kubectl(t, "", "patch", v1, "-n", ns, "two", "--type=json", "-p", `[{"op":"remove","path":"/spec/backup"}]`)
	if err == nil || !strings.Contains(out, "spec.backups") || !strings.Contains(out, "write it at v2") {
		t.Errorf("a write at v1 removing the backup: %v: %s, want it refused naming spec.backups and v2", err, out)
	}
	after := mustGetAt(t, v2, ns, "two")
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the refused write changed the CR: %s -> %s", jsonText(before.Object["spec"]), jsonText(after.Object["spec"]))
	}
	if n, _, _ := unstructured.NestedSlice(after.Object, "spec", "backups"); len(n) != 2 {
		t.Errorf("backups after the refused write: %s", jsonText(after.Object["spec"]))
	}
}
