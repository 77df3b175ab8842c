package operator_test

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestIdentityPrunesWithoutRightsOnOtherKinds: a kind whose role grants
// its own child kind only (Services; none on ConfigMaps, an allowed kind,
// nor on PersistentVolumeClaims, a data kind, as the generated roles are)
// still prunes and deletes: the owned listing leaves out the kinds its
// identity may neither list nor write, instead of stalling Forbidden.
func TestIdentityPrunesWithoutRightsOnOtherKinds(t *testing.T) {
	ns := clustertest.Namespace(t)
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/alphas.id.test.example")
	})
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{"cueop-operator": operatorRole, alphaSA: {servicesAll}})
	dir := kindsDir(t, map[string]string{"alpha": `package alpha

resource: {group: "id.test.example", version: "v1", kind: "Alpha"}
#Spec: {two: *false | bool}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: svc: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name, spec: ports: [{port: 80}]}
if parent.spec.two {
	children: two: {apiVersion: "v1", kind: "Service", metadata: name: parent.metadata.name + "-two", spec: ports: [{port: 80}]}
}
`})
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Service,ConfigMap")
	opts.Identities = &identity.Config{Namespace: ns}
	operatortest.Start(t, serviceAccountConfig(t, ns, "cueop-operator"), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "alphas.id.test.example")
	mustKubectl(t, "apiVersion: id.test.example/v1\nkind: Alpha\nmetadata: {name: a, namespace: "+ns+"}\nspec: {two: true}\n", "apply", "-f", "-")
	c := newClient(t)
	eventually(t, 90*time.Second, func() string {
		if object(t, c, serviceGVK, ns, "a-two") == nil {
			return "no Service a-two"
		}
		return ""
	})
	mustKubectl(t, "", "patch", "-n", ns, "alphas.id.test.example/a", "--type=merge", "-p", `{"spec":{"two":false}}`)
	eventually(t, 90*time.Second, func() string {
		if object(t, c, serviceGVK, ns, "a-two") != nil {
			msg, _ := kubectl(t, "", "get", "alphas.id.test.example", "-n", ns, "a", "-o", `jsonpath={.status.conditions}`)
			return "Service a-two not pruned; conditions " + msg
		}
		return ""
	})
	if out, err := kubectl(t, "", "delete", "-n", ns, "--wait", "--timeout=60s", "alphas.id.test.example/a"); err != nil {
		msg, _ := kubectl(t, "", "get", "alphas.id.test.example", "-n", ns, "a", "-o", `jsonpath={.status.conditions}`)
		t.Fatalf("deleting Alpha a: %v: %s; conditions %s", err, out, msg)
	}
}
