package operator_test

import (
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestIdentityRequestsCarryCueopUserAgent: the requests a kind's identity
// sends (impersonating its ServiceAccount) carry cueop's User-Agent, not
// Go's default, so that the API server's audit log tells them apart.
func TestIdentityRequestsCarryCueopUserAgent(t *testing.T) {
	ns := clustertest.Namespace(t)
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/betas.id.test.example")
	})
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{"cueop-operator": operatorRole, betaSA: {servicesAll, claimsRead, configRead}})
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: "+ns+"}\ndata: {v: beta-only}\n", "apply", "-f", "-")
	dir := kindsDir(t, map[string]string{"beta": idKind("Beta")})
	// The requests as they leave client-go: a config's WrapTransport is the
	// innermost round tripper, below the ones that set User-Agent and the
	// impersonation headers.
	cfg, reqs := testkit.CountRequests(serviceAccountConfig(t, ns, "cueop-operator"))
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Service")
	opts.Identities = &identity.Config{Namespace: ns}
	operatortest.Start(t, cfg, opts)
	clustertest.WaitEstablished(t, 60*time.Second, "betas.id.test.example")
	mustKubectl(t, "apiVersion: id.test.example/v1\nkind: Beta\nmetadata: {name: b, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	betaServed(t, ns, "") // written by Beta's identity

	byUser := map[string]map[string]int{} // impersonated user: user agent: requests
	for _, r := range reqs.All() {
		if user := r.Header.Get("Impersonate-User"); user != "" {
			if byUser[user] == nil {
				byUser[user] = map[string]int{}
			}
			byUser[user][r.Header.Get("User-Agent")]++
		}
	}
	user := "system:serviceaccount:" + ns + ":" + betaSA
	if len(byUser[user]) == 0 {
		t.Fatalf("no request impersonating %s seen; impersonated: %v", user, byUser)
	}
	for u, byAgent := range byUser {
		for agent, n := range byAgent {
			if !strings.HasPrefix(agent, "cueop/") {
				t.Errorf("%d requests as %s with User-Agent %q, want cueop/<version> (...)", n, u, agent)
			}
		}
	}
	t.Logf("requests as identities: %v", byUser)
}
