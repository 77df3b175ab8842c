package operator_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// userAgents records the User-Agent of each request sent under an
// identity (with an Impersonate-User header), as it leaves client-go: a
// config's WrapTransport is the innermost round tripper, below the ones
// that set User-Agent and the impersonation headers.
type userAgents struct {
	mu     sync.Mutex
	byUser map[string]map[string]int // impersonated user: user agent: requests
}

func (u *userAgents) wrap(rt http.RoundTripper) http.RoundTripper {
	return testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if user := req.Header.Get("Impersonate-User"); user != "" {
			u.mu.Lock()
			if u.byUser[user] == nil {
				u.byUser[user] = map[string]int{}
			}
			u.byUser[user][req.Header.Get("User-Agent")]++
			u.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

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
	agents := &userAgents{byUser: map[string]map[string]int{}}
	cfg := serviceAccountConfig(t, ns, "cueop-operator")
	cfg.Wrap(agents.wrap)
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Service")
	opts.Identities = &identity.Config{Namespace: ns}
	operatortest.Start(t, cfg, opts)
	clustertest.WaitEstablished(t, 60*time.Second, "betas.id.test.example")
	mustKubectl(t, "apiVersion: id.test.example/v1\nkind: Beta\nmetadata: {name: b, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	betaServed(t, ns, "") // written by Beta's identity

	agents.mu.Lock()
	defer agents.mu.Unlock()
	user := "system:serviceaccount:" + ns + ":" + betaSA
	if len(agents.byUser[user]) == 0 {
		t.Fatalf("no request impersonating %s seen; impersonated: %v", user, agents.byUser)
	}
	for u, byAgent := range agents.byUser {
		for agent, n := range byAgent {
			if !strings.HasPrefix(agent, "cueop/") {
				t.Errorf("%d requests as %s with User-Agent %q, want cueop/<version> (...)", n, u, agent)
			}
		}
	}
	t.Logf("requests as identities: %v", agents.byUser)
}
