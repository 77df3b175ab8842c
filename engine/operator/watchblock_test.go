package operator_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// noListRBAC lets user cueop-nolist do what an operator of the test kinds
// needs, but list and watch Knots: a Knot watch never syncs.
const noListRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cueop-test-nolist}
rules:
- apiGroups: ["", "apiextensions.k8s.io", "events.k8s.io", "coordination.k8s.io", "idtest.example.com", "apps", "batch", "policy", "networking.k8s.io", "autoscaling"]
  resources: ["*"]
  verbs: ["*"]
- apiGroups: ["knot.idtest.example.com"]
  resources: ["knots"]
  verbs: ["get", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cueop-test-nolist}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cueop-test-nolist}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: cueop-nolist}
`

var knotCRD = testCRD("knot.idtest.example.com", "Knot", preserveSpec)

const blockerTemplate = `package blocker

resource: {group: "idtest.example.com", version: "v1", kind: "Blocker"}

#Spec: {}
#Status: {}

` + testkit.ParentObserved + `
children: knot: {
	apiVersion: "knot.idtest.example.com/v1"
	kind:       "Knot"
	metadata: name: parent.metadata.name
}
status: {}
`

const noteTemplate = `package note

resource: {group: "idtest.example.com", version: "v1", kind: "Note"}

#Spec: {text: *"" | string}
#Status: {text: string}

` + testkit.ParentObserved + `
children: config: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name
	data: text: parent.spec.text
}
status: {
	if observed.config != _|_ {text: observed.config.data.text}
	if observed.config == _|_ {text: ""}
}
ready: status.text == parent.spec.text
`

// TestUnsyncedWatchDelaysOnlyItsKind runs the operator as a user that may
// not list or watch Knots. A Blocker renders a Knot, whose watch never
// syncs; meanwhile a Note (a ConfigMap) created after the Knot list was
// refused converges at once, and the Blocker is refused: Ready=False,
// reason Forbidden, naming the Knots (engine/reconcile/forbidden.go).
func TestUnsyncedWatchDelaysOnlyItsKind(t *testing.T) {
	ns := clustertest.Namespace(t)
	mustKubectl(t, noListRBAC, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, noListRBAC, "delete", "--ignore-not-found", "-f", "-") })
	dir := kindsDir(t, map[string]string{"blocker": blockerTemplate, "note": noteTemplate})
	cfg := rest.CopyConfig(clustertest.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "cueop-nolist"}
	cfg, reqs := testkit.CountRequests(cfg)
	startKinds(t, dir, ns, "Knot.knot.idtest.example.com", cfg)
	clustertest.WaitEstablished(t, 60*time.Second, "blockers.idtest.example.com")
	clustertest.WaitEstablished(t, 60*time.Second, "notes.idtest.example.com")
	// After the start, or the operator, looking for Knots it manages,
	// would stop at once (see e2e TestAllowedKindBeyondRBACFailsClearly).
	installCRD(t, knotCRD, "knots.knot.idtest.example.com")

	mustKubectl(t, "apiVersion: idtest.example.com/v1\nkind: Blocker\nmetadata: {name: b, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		if reqs.Count(func(r testkit.Request) bool { return r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/knots") }) == 0 {
			return "the operator has not tried to list Knots"
		}
		return ""
	})
	start := time.Now()
	mustKubectl(t, "apiVersion: idtest.example.com/v1\nkind: Note\nmetadata: {name: note, namespace: "+ns+"}\nspec: {text: hello}\n", "apply", "-f", "-")
	c := newClient(t)
	// The Knot watch holds its reconciles up to 30 s; 10 s is for a
	// ConfigMap's on a loaded machine.
	eventually(t, 10*time.Second, func() string { return crConverged(t, c, "idtest.example.com/v1", "Note", ns, "note") })
	t.Logf("Note converged %s after it was created, while the Knot watch could not sync", time.Since(start).Round(time.Millisecond))

	eventually(t, 60*time.Second, func() string {
		b := getObj(t, c, "idtest.example.com/v1", "Blocker", ns, "b")
		ready := conditionOf(b, "Ready")
		if ready == nil || ready["status"] != "False" || ready["reason"] != "Forbidden" || !strings.Contains(ready["message"].(string), "knots") {
			return "Blocker status = " + strings.TrimSpace(strings.ReplaceAll(mustKubectl(t, "", "-n", ns, "get", "blocker/b", "-o", "jsonpath={.status}"), "\n", " "))
		}
		return ""
	})
}
