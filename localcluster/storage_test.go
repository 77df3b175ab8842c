package localcluster_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// claimAndPod is a PersistentVolumeClaim (of the class given, or of the
// default class when class is "") and a Pod that mounts it.
func claimAndPod(class string) string {
	sc := ""
	if class != "" {
		sc = "\n  storageClassName: " + class
	}
	return `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}` + sc + `
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers: [{name: db, image: example.invalid/db:1, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`
}

// TestClaimsBindInBothModes: a claim of the default class (waiting for its
// first consumer) and one of the Immediate class bind to a volume of the
// local provisioner, and the Pod that mounts each runs; the volume goes
// with its claim.
func TestClaimsBindInBothModes(t *testing.T) {
	t.Parallel()
	for _, class := range []string{"", localcluster.StorageClassImmediate} {
		ns := clustertest.Namespace(t)
		kubectl(t, claimAndPod(class), "apply", "-n", ns, "-f", "-")
		kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s")
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "pod/db", "--timeout=60s")
		got := kubectl(t, "", "get", "-n", ns, "pvc/data", "-o", "jsonpath={.spec.storageClassName} {.spec.volumeName}")
		want := class
		if want == "" {
			want = localcluster.StorageClassDefault
		}
		if !strings.HasPrefix(got, want+" pvc-") {
			t.Errorf("claim of class %q: class and volume = %q, want %s and a provisioned volume", class, got, want)
		}
		pv := strings.Fields(got)[1]
		if class == "" {
			node := kubectl(t, "", "get", "-n", ns, "pod/db", "-o", "jsonpath={.spec.nodeName}")
			affinity := kubectl(t, "", "get", "pv/"+pv, "-o", "jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}")
			if affinity != node {
				t.Errorf("volume %s is on node %q, its first consumer runs on %q", pv, affinity, node)
			}
		}
		kubectl(t, "", "delete", "-n", ns, "pod/db", "pvc/data", "--wait")
		kubectl(t, "", "wait", "--for=delete", "pv/"+pv, "--timeout=60s")
	}
}
