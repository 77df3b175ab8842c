package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// rbacKinds are the kinds of config/default applied for real by the RBAC
// tests: everything but the controller's own workload.
var rbacKinds = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

var applyOnce sync.Once

// applyRBAC applies the namespace, CRDs and RBAC of config/default, once
// per test binary, and waits for the CRDs to be established.
func applyRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	applyOnce.Do(func() {
		var apply []*unstructured.Unstructured
		var crds []string
		for _, o := range objs {
			if slices.Contains(rbacKinds, o.GetKind()) {
				apply = append(apply, o)
			}
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, "crd/"+o.GetName())
			}
		}
		mustKubectl(t, yamlStream(t, apply), "apply", "-f", "-")
		mustKubectl(t, "", append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
	})
}

// TestGeneratedRBACIsSufficient runs the operator as its ServiceAccount,
// with only the generated RBAC and each kind acting as its own
// ServiceAccount (Options.Identities as the Deployment sets them), and
// requires every sample to become Ready: the operator's role lets it read
// its CRs, write their status, record events, hold the leader election
// lease and impersonate the kinds' ServiceAccounts, whose roles let each
// manage its own child kinds.
func TestGeneratedRBACIsSufficient(t *testing.T) {
	objs := buildDefault(t)
	applyRBAC(t, objs)
	ns := clustertest.Namespace(t)
	operatortest.Start(t, asServiceAccount(), operator.Options{
		Templates: templatesDir, InstallCRDs: false, Namespace: ns, AllowedKinds: allowedKinds(t, objs),
		Identities: identities(t, objs),
		Manager: ctrl.Options{
			LeaderElection: true, LeaderElectionNamespace: systemNS, LeaderElectionID: "cueop-leader-e2e",
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		},
	})
	// The CRDs of config/ carry no CA bundle: the operator writes its own
	// endpoint's (here on 127.0.0.1) into them, then v2 reads convert.
	eventually(t, 60*time.Second, func() string {
		out, _ := kubectl(t, "", "get", "crd", "redisclusters.cache.example.com", "-o", "jsonpath={.spec.conversion.webhook.clientConfig.caBundle}")
		if out == "" {
			return "the RedisCluster CRD has no CA bundle"
		}
		return ""
	})
	samples := readSamples(t, ns)
	mustKubectl(t, yamlStream(t, samples), "apply", "-f", "-")
	for _, s := range samples {
		if s.GroupVersionKind().Group == "" {
			continue // the ConfigMap the Blog references: not a CR
		}
		waitReady(t, ns, strings.ToLower(s.GetKind())+"/"+s.GetName())
	}
	if got := mustKubectl(t, "", "-n", ns, "get", "blog/news", "-o", "jsonpath={.status.volume}"); got != "Bound" {
		t.Errorf("blog/news status.volume = %q, want Bound (its claim bound by the cluster's provisioner)", got)
	}
	if got := mustKubectl(t, "", "-n", ns, "get", "rediscluster/sample", "-o", "jsonpath={.status.readyReplicas}"); got != "3" {
		t.Errorf("rediscluster/sample readyReplicas = %q, want 3", got)
	}
	eventually(t, 60*time.Second, func() string {
		if out, _ := kubectl(t, "", "-n", ns, "get", "events", "--field-selector=involvedObject.name=sample", "-o", "name"); out == "" {
			return "no event recorded for rediscluster/sample"
		}
		return ""
	})
	if holder := mustKubectl(t, "", "-n", systemNS, "get", "lease", "cueop-leader-e2e", "-o", "jsonpath={.spec.holderIdentity}"); holder == "" {
		t.Error("lease cueop-leader-e2e has no holder")
	}
}

// TestAllowedKindBeyondRBACFailsClearly runs the operator with the shared
// identity (no per-kind ServiceAccounts) on the generated RBAC, which
// gives the operator's own identity no right on any child kind, and allows
// one more (Secret): looking for the children it manages at start, it
// stops with an error naming the refused list, instead of waiting forever
// on a watch. (With per-kind identities a refused list is a kind's
// Forbidden condition: engine/operator's identity tests.)
func TestAllowedKindBeyondRBACFailsClearly(t *testing.T) {
	objs := buildDefault(t)
	applyRBAC(t, objs)
	ns := clustertest.Namespace(t)
	allowed := allowedKinds(t, objs)
	allowed[schema.GroupKind{Kind: "Secret"}] = true
	opts := operatortest.Options(templatesDir, ns)
	opts.InstallCRDs, opts.AllowedKinds = false, allowed
	op, err := operator.New(asServiceAccount(), opts)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = op.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "list") {
		t.Fatalf("operator ended with %v, want a child kind's list refused", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the operator ran until the deadline: %v", err)
	}
	t.Log(err)
}

// waitReady waits for the CR ref to be Ready; if it is not, the failure
// shows its conditions, which name what the operator was refused.
func waitReady(t *testing.T, ns, ref string) {
	t.Helper()
	if _, err := kubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "--timeout=120s", ref); err != nil {
		conds, _ := kubectl(t, "", "-n", ns, "get", ref, "-o", "jsonpath={.status.conditions}")
		t.Fatalf("%s not Ready: %v; conditions: %s", ref, err, conds)
	}
}

// identities is the mapping of kinds to ServiceAccounts the generated
// Deployment gives `cueop run`.
func identities(t *testing.T, objs []*unstructured.Unstructured) *identity.Config {
	t.Helper()
	c := &identity.Config{Namespace: deploymentEnv(t, objs, "CUEOP_IDENTITY_NAMESPACE")}
	must(t, c.ParseServiceAccounts(strings.Fields(deploymentEnv(t, objs, "CUEOP_SERVICE_ACCOUNTS"))))
	must(t, c.ParseNamespaces(strings.Fields(deploymentEnv(t, objs, "CUEOP_BIND_NAMESPACES"))))
	return c
}

// asServiceAccount is the cluster's admin config impersonating the
// controller's ServiceAccount: the API server adds its groups.
func asServiceAccount() *rest.Config {
	cfg := clustertest.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount}
	return cfg
}

// readSamples reads config/samples, moved to namespace ns.
func readSamples(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("../config/samples/*.yaml")
	must(t, err)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		must(t, err)
		o, err := golden.ParseObjects(data)
		must(t, err)
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		t.Fatal("no sample in config/samples")
	}
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	return objs
}

// TestServiceAccountIsLeastPrivilege asks the API server what the
// controller's ServiceAccount may do: what the operator needs itself, the
// impersonation of exactly the kinds' ServiceAccounts, and not children
// (the kinds' own), Secrets, RBAC or other impersonation.
func TestServiceAccountIsLeastPrivilege(t *testing.T) {
	applyRBAC(t, buildDefault(t))
	ns := clustertest.Namespace(t)
	inNS := func(args ...string) []string { return append(args, "-n", ns) }
	cluster := func(args ...string) []string { return append(args, "--all-namespaces") }
	for _, c := range []struct {
		args []string
		want string
	}{
		{inNS("create", "pods"), "no"},
		{inNS("delete", "deployments.apps"), "no"},
		{[]string{"impersonate", "serviceaccounts/cueop-redisclusters.cache.example.com", "-n", systemNS}, "yes"},
		{[]string{"impersonate", "serviceaccounts/cueop-controller", "-n", systemNS}, "no"},
		{inNS("impersonate", "serviceaccounts/cueop-redisclusters.cache.example.com"), "no"},
		{inNS("patch", "redisclusters.cache.example.com", "--subresource=status"), "yes"},
		{[]string{"create", "leases.coordination.k8s.io", "-n", systemNS}, "yes"},
		{inNS("create", "leases.coordination.k8s.io"), "no"},
		{inNS("create", "secrets"), "no"},
		{inNS("get", "secrets"), "no"},
		{[]string{"list", "secrets", "-n", systemNS}, "no"},
		{cluster("create", "clusterroles.rbac.authorization.k8s.io"), "no"},
		{cluster("create", "clusterrolebindings.rbac.authorization.k8s.io"), "no"},
		{inNS("create", "roles.rbac.authorization.k8s.io"), "no"},
		{cluster("impersonate", "users"), "no"},
		{inNS("create", "pods", "--subresource=exec"), "no"},
		{inNS("create", "serviceaccounts"), "no"},
		{inNS("create", "persistentvolumeclaims"), "no"}, // the Blog's own
		{inNS("create", "statefulsets.apps"), "no"},      // allowed, but no template creates one
		{inNS("create", "redisclusters.cache.example.com"), "no"},
		{inNS("patch", "redisclusters.cache.example.com"), "yes"}, // it has two versions: its storage migration moves managedFields entries
		{inNS("patch", "blogs.blog.example.com"), "yes"},          // it retains its claim: a finalizer
		{inNS("patch", "staticsites.web.example.com"), "no"},      // one version, no retained child: nothing to patch
		{cluster("delete", "customresourcedefinitions.apiextensions.k8s.io"), "no"},
		{cluster("patch", "customresourcedefinitions.apiextensions.k8s.io/redisclusters.cache.example.com"), "yes"},
		{cluster("patch", "customresourcedefinitions.apiextensions.k8s.io/other.example.org"), "no"}, // another team's CRD
		{cluster("update", "customresourcedefinitions.apiextensions.k8s.io/other.example.org", "--subresource=status"), "no"},
	} {
		out, _ := kubectl(t, "", append([]string{"auth", "can-i", "--as=" + serviceAccount}, c.args...)...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("kubectl auth can-i %s: %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
}

// TestKindServiceAccountsAreLeastPrivilege asks the API server what each
// kind's ServiceAccount may do: its own child kinds and references, not
// another kind's child kinds its templates never render, not its CRs.
func TestKindServiceAccountsAreLeastPrivilege(t *testing.T) {
	applyRBAC(t, buildDefault(t))
	ns := clustertest.Namespace(t)
	const redis, blog = "cueop-redisclusters.cache.example.com", "cueop-blogs.blog.example.com"
	for _, c := range []struct {
		sa   string
		args []string
		want string
	}{
		{redis, []string{"create", "pods"}, "yes"},
		{redis, []string{"delete", "services"}, "yes"},
		{redis, []string{"update", "redisclusters.cache.example.com", "--subresource=finalizers"}, "yes"},
		{redis, []string{"create", "persistentvolumeclaims"}, "no"}, // the Blog's
		{redis, []string{"create", "deployments.apps"}, "no"},
		{redis, []string{"patch", "redisclusters.cache.example.com", "--subresource=status"}, "no"}, // the operator's
		{redis, []string{"get", "secrets"}, "no"},
		{blog, []string{"create", "persistentvolumeclaims"}, "yes"},
		{blog, []string{"create", "jobs.batch"}, "yes"},
		{blog, []string{"watch", "configmaps"}, "yes"}, // its settings
		{blog, []string{"create", "configmaps"}, "no"}, // read, never written
		{blog, []string{"create", "pods"}, "no"},       // the RedisCluster's
		{blog, []string{"get", "storageclasses.storage.k8s.io", "--all-namespaces"}, "yes"},
		{blog, []string{"list", "storageclasses.storage.k8s.io", "--all-namespaces"}, "no"},
	} {
		args := append([]string{"auth", "can-i", "--as=system:serviceaccount:" + systemNS + ":" + c.sa}, c.args...)
		if !slices.Contains(c.args, "--all-namespaces") {
			args = append(args, "-n", ns)
		}
		out, _ := kubectl(t, "", args...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(args, " "), got, c.want)
		}
	}
}

// TestRoleResourcesAreServed checks every resource the generated roles name
// against the API server's discovery: a plural spelt wrong would grant
// nothing.
func TestRoleResourcesAreServed(t *testing.T) {
	objs := buildDefault(t)
	applyRBAC(t, objs)
	served := strings.Fields(mustKubectl(t, "", "api-resources", "-o", "name"))
	var rules []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			var role rbacv1.ClusterRole // a Role's rules read the same
			typed(t, o, &role)
			rules = append(rules, role.Rules...)
		}
	}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				name := strings.SplitN(res, "/", 2)[0]
				if g != "" {
					name += "." + g
				}
				if !slices.Contains(served, name) {
					t.Errorf("role rule names %s, which the API server does not serve", name)
				}
			}
		}
	}
}
