package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// grantRoles creates, in ns, a ServiceAccount per name of rules and a
// ClusterRole and ClusterRoleBinding giving it rules, and deletes them at
// the test's end.
func grantRoles(t *testing.T, ns string, rules map[string][]rbacv1.PolicyRule) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(clustertest.Config())
	ctx := context.Background()
	for sa, r := range rules {
		name := ns + "-" + sa
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		must(t, err)
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: r}, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}}}, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}

// serviceAccountConfig is a config authenticating as the ServiceAccount
// ns/name with a token the API server issues (TokenRequest), no client
// certificate.
func serviceAccountConfig(t *testing.T, ns, name string) *rest.Config {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(clustertest.Config())
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
	must(t, err)
	cfg := rest.AnonymousClientConfig(clustertest.Config())
	cfg.BearerToken = tok.Status.Token
	return cfg
}

func ptrTo[T any](v T) *T { return &v }

// idKind is a kind of group id.test.example whose CR's child is a Service
// annotated with the data of the ConfigMap "shared" of its namespace.
func idKind(kind string) string {
	return `package ` + strings.ToLower(kind) + `

resource: {group: "id.test.example", version: "v1", kind: "` + kind + `"}
#Spec: {}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
referenced: shared: {data: v: string}
references: shared: {apiVersion: "v1", kind: "ConfigMap", name: "shared"}
children: svc: {
	apiVersion: "v1"
	kind:       "Service"
	metadata: {name: parent.metadata.name, annotations: shared: referenced.shared.data.v}
	spec: ports: [{port: 80}]
}
`
}

var (
	servicesAll  = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"*"}}
	claimsRead   = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}}
	configRead   = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
	alphaSA      = identity.DefaultName("alphas.id.test.example")
	betaSA       = identity.DefaultName("betas.id.test.example")
	operatorRole = []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"*"}},
		{APIGroups: []string{"id.test.example"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"*"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{alphaSA, betaSA}},
	}
)

// startIdentities runs, as the ServiceAccount cueop-operator of ns (its
// own rights and impersonate on the kinds' ServiceAccounts only), an
// operator serving the kinds of dir (Alpha, whose role may not read
// ConfigMaps, and Beta, whose may), each as its own ServiceAccount, until
// stop or the test's end, and waits until the kinds' CRDs (crds) are
// established. cfg, when not nil, is the config to run with (one that
// authenticates as cueop-operator); allowed are the child kinds allowed.
func startIdentities(t *testing.T, cfg *rest.Config, ns, dir, allowed string, crds ...string) (stop func()) {
	t.Helper()
	if cfg == nil {
		cfg = serviceAccountConfig(t, ns, "cueop-operator")
	}
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet(allowed)
	opts.Identities = &identity.Config{Namespace: ns}
	stop = operatortest.Start(t, cfg, opts)
	clustertest.WaitEstablished(t, 60*time.Second, crds...)
	return stop
}

// TestIdentitiesActAsTheKindsServiceAccounts: the operator, as its own
// ServiceAccount with no right on Services, serves two kinds each as its
// ServiceAccount: Beta's child is written by Beta's (its managedFields'
// manager is cueop, and the operator's own token may not create one),
// Alpha, whose role may not read ConfigMaps, does not get the data Beta
// reads (its reference read is Forbidden). A restart and a template edit
// keep the children, and the children carry their identity's label.
func TestIdentitiesActAsTheKindsServiceAccounts(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, "alphas.id.test.example", "betas.id.test.example")
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{"cueop-operator": operatorRole,
		alphaSA: {servicesAll, claimsRead}, betaSA: {servicesAll, claimsRead, configRead}})
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: "+ns+"}\ndata: {v: beta-only}\n", "apply", "-f", "-")
	dir := kindsDir(t, map[string]string{"alpha": idKind("Alpha"), "beta": idKind("Beta")})
	stop := startIdentities(t, nil, ns, dir, "Service", "alphas.id.test.example", "betas.id.test.example")
	mustKubectl(t, "apiVersion: id.test.example/v1\nkind: Alpha\nmetadata: {name: a, namespace: "+ns+"}\nspec: {}\n---\n"+
		"apiVersion: id.test.example/v1\nkind: Beta\nmetadata: {name: b, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	c := newClient(t)
	uid := betaServed(t, ns, "")

	// The operator's own identity may not write children.
	own := kubernetes.NewForConfigOrDie(serviceAccountConfig(t, ns, "cueop-operator"))
	_, err := own.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "direct"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a Service created with the operator's own token: %v, want Forbidden", err)
	}
	eventually(t, 90*time.Second, func() string {
		if object(t, c, serviceGVK, ns, "a") != nil {
			return "Alpha's Service exists: it read a ConfigMap its role may not read"
		}
		out, _ := kubectl(t, "", "get", "alphas.id.test.example", "-n", ns, "a", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		if !strings.Contains(out, "forbidden") || !strings.Contains(out, alphaSA) {
			return "Alpha's Ready message: " + out + ", want its reference read forbidden to " + alphaSA
		}
		return ""
	})

	stop() // a restart keeps Beta's child, unchanged
	startIdentities(t, nil, ns, dir, "Service")
	testkit.WriteKind(t, dir, "beta", strings.Replace(idKind("Beta"), "port: 80", "port: 81", 1))
	if got := betaServed(t, ns, "81"); got != uid {
		t.Errorf("Beta's Service uid %s after a restart and an edit, want %s: recreated", got, uid)
	}
	mustKubectl(t, "", "delete", "-n", ns, "--wait", "--timeout=60s", "alphas.id.test.example/a", "betas.id.test.example/b")
}

// betaServed waits for Beta's Service, labelled with Beta's identity and
// annotated with the data only Beta may read (with port when not empty),
// and returns its uid.
func betaServed(t *testing.T, ns, port string) string {
	t.Helper()
	c := newClient(t)
	var uid string
	eventually(t, 90*time.Second, func() string {
		o := object(t, c, serviceGVK, ns, "b")
		if o == nil {
			return "no Service b"
		}
		if got := o.GetAnnotations()["shared"]; got != "beta-only" {
			return "Service b annotated " + got
		}
		if o.GetLabels()[wellknown.LabelIdentity] == "" {
			return "Service b not labelled " + wellknown.LabelIdentity
		}
		if port != "" && !strings.Contains(fmt.Sprint(o.Object["spec"]), "port:"+port) {
			return "Service b not yet at port " + port
		}
		uid = string(o.GetUID())
		return ""
	})
	return uid
}

// TestIdentityPrunesWithoutRightsOnOtherKinds: a kind whose role grants
// its own child kind only (Services; none on ConfigMaps, an allowed kind,
// nor on PersistentVolumeClaims, a data kind, as the generated roles are)
// still prunes and deletes: the owned listing leaves out the kinds its
// identity may neither list nor write, instead of stalling Forbidden.
func TestIdentityPrunesWithoutRightsOnOtherKinds(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, "alphas.id.test.example")
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
	startIdentities(t, nil, ns, dir, "Service,ConfigMap", "alphas.id.test.example")
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

// TestIdentityRequestsCarryCueopUserAgent: the requests a kind's identity
// sends (impersonating its ServiceAccount) carry cueop's User-Agent, not
// Go's default, so that the API server's audit log tells them apart.
func TestIdentityRequestsCarryCueopUserAgent(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, "betas.id.test.example")
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{"cueop-operator": operatorRole, betaSA: {servicesAll, claimsRead, configRead}})
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: "+ns+"}\ndata: {v: beta-only}\n", "apply", "-f", "-")
	dir := kindsDir(t, map[string]string{"beta": idKind("Beta")})
	// The requests as they leave client-go: a config's WrapTransport is the
	// innermost round tripper, below the ones that set User-Agent and the
	// impersonation headers.
	cfg, reqs := testkit.CountRequests(serviceAccountConfig(t, ns, "cueop-operator"))
	startIdentities(t, cfg, ns, dir, "Service", "betas.id.test.example")
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

// TestRevisionNeedingMoreRightsRefused: Beta serves as its ServiceAccount,
// whose role grants Services and reading ConfigMaps; an edit that adds a
// ConfigMap child needs create (and more) on ConfigMaps, which the API
// server does not grant it: the revision is refused, naming the rules
// missing and the role, and the revision before keeps serving its CR.
func TestRevisionNeedingMoreRightsRefused(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, "betas.id.test.example")
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{"cueop-operator": operatorRole, betaSA: {servicesAll, claimsRead, configRead}})
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: "+ns+"}\ndata: {v: beta-only}\n", "apply", "-f", "-")
	src := idKind("Beta")
	dir := kindsDir(t, map[string]string{"beta": src})
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Service,ConfigMap")
	opts.Identities = &identity.Config{Namespace: ns}
	act, _ := operatortest.StartObserved(t, serviceAccountConfig(t, ns, "cueop-operator"), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "betas.id.test.example")
	mustKubectl(t, "apiVersion: id.test.example/v1\nkind: Beta\nmetadata: {name: b, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	uid := betaServed(t, ns, "")

	testkit.WriteKind(t, dir, "beta", src+"children: note: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: name: parent.metadata.name + \"-note\", data: v: \"1\"}\n")
	line := act.WaitLog(t, 60*time.Second, "refused by its admission")
	for _, want := range []string{"create configmaps in namespace " + ns, "delete configmaps in namespace " + ns, betaSA} {
		if !strings.Contains(line.Msg, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, line.Msg)
		}
	}
	if got := act.Logged("template changed", "kind", "Beta"); len(got) > 0 {
		t.Fatalf("the revision needing more rights was served: %+v", got)
	}
	if got := betaServed(t, ns, ""); got != uid {
		t.Errorf("Service b replaced (uid %s, was %s)", got, uid)
	}
}
