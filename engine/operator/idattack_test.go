package operator_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// bindInNamespace creates, in idNS, the ServiceAccount sa, a ClusterRole
// of rules and, in ns only, a RoleBinding of it to sa: what `cueop
// manifests --bind-namespaces` generates. All deleted at the test's end.
func bindInNamespace(t *testing.T, idNS, sa, ns string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(clustertest.Config())
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(idNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	must(t, err)
	name := idNS + "-" + sa
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: idNS, Name: sa}}}, metav1.CreateOptions{})
	must(t, err)
}

// TestBoundByRoleBindingsConverges: the Widget kind is bound in namespace a
// only, as the generated RBAC binds it there: a RoleBinding in a, no
// ClusterRoleBinding. Its CR in a converges (its identity's caches list
// and watch where it is bound, not across the cluster, which its role
// refuses); its CR in b reads NamespaceNotBound.
func TestBoundByRoleBindingsConverges(t *testing.T) {
	c, a, b := startBoundWidget(t, func(idNS, sa, a string, rules []rbacv1.PolicyRule) { bindInNamespace(t, idNS, sa, a, rules) })
	eventually(t, 60*time.Second, func() string {
		return stalledCR(getObj(t, c, fbGroup+"/v1", "Widget", b, "w"), "NamespaceNotBound", "namespace "+b)
	})
	mustKubectl(t, "", "delete", "--wait", "--timeout=60s", "-n", a, "widgets."+fbGroup+"/w")
	mustKubectl(t, "", "delete", "--wait", "--timeout=60s", "-n", b, "widgets."+fbGroup+"/w")
}

// startBoundWidget runs an operator on the Widget kind, bound in namespace
// a only, acting as its own identity, granted its rules by bind; it
// applies a Widget w in a and in b and waits until the one in a converges.
func startBoundWidget(t *testing.T, bind func(idNS, sa, a string, rules []rbacv1.PolicyRule)) (c client.Client, a, b string) {
	t.Helper()
	a, b = clustertest.Namespace(t), clustertest.Namespace(t)
	opts := operatortest.Options(kindsDir(t, map[string]string{"widget": fbWidgetTemplate}), "")
	gk := schema.GroupKind{Group: fbGroup, Kind: "Widget"}
	idNS := clustertest.Namespace(t)
	opts.Identities = &identity.Config{Namespace: idNS, Namespaces: map[schema.GroupKind][]string{gk: {a}}}
	bind(idNS, identity.DefaultName("widgets."+fbGroup), a, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
		{APIGroups: []string{fbGroup}, Resources: []string{"widgets/finalizers"}, Verbs: []string{"update"}},
	})
	operatortest.Start(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "widgets."+fbGroup)
	c = newClient(t)
	mustKubectl(t, fbCR("Widget", a, "w", "")+"---\n"+fbCR("Widget", b, "w", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Widget", a, "w") })
	return c, a, b
}

// retainerRules are all the rights a Retainer's identity needs.
var retainerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
	{APIGroups: []string{fbGroup}, Resources: []string{"retainers/finalizers"}, Verbs: []string{"update"}},
}

// startRetainerIdentity runs an operator on the Retainer kind in ns, acting
// as its own ServiceAccount there, granted retainerRules; it applies the
// Retainer g and waits until it converges. It returns the ServiceAccount's
// name and the uid of g's ConfigMap.
func startRetainerIdentity(t *testing.T, ns string) (c client.Client, sa string, cm types.UID) {
	t.Helper()
	clustertest.DeleteCRDsAtEnd(t, "retainers."+fbGroup)
	sa = identity.DefaultName("retainers." + fbGroup)
	grantRoles(t, ns, map[string][]rbacv1.PolicyRule{sa: retainerRules})
	opts := operatortest.Options(kindsDir(t, map[string]string{"retainer": fbRetainerTemplate}), ns)
	opts.Identities = &identity.Config{Namespace: ns}
	operatortest.Start(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "retainers."+fbGroup)
	c = newClient(t)
	mustKubectl(t, fbCR("Retainer", ns, "g", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Retainer", ns, "g") })
	return c, sa, uidOf(t, c, "ConfigMap", ns, "g")
}

// identityRefusesConfigMaps waits until the authorizer refuses sa of ns a
// list of ConfigMaps.
func identityRefusesConfigMaps(t *testing.T, ns, sa string) {
	t.Helper()
	eventually(t, 30*time.Second, func() string {
		if _, err := serviceAccountClient(t, ns, sa).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return "the identity still lists ConfigMaps: " + errText(err)
		}
		return ""
	})
}

// TestIdentityLosingItsBindingKeepsRetainedChildren: a Retainer, acting as
// its own ServiceAccount, retains its ConfigMap on deletion. Its
// identity's binding is then removed (an upgrade that deletes and
// recreates the RBAC, a binding renamed): it may do nothing. The CR is
// deleted: it keeps its finalizer and reads Forbidden, and its ConfigMap
// stays, still owned (not left to the garbage collector). Once the binding
// is back, the deletion completes and the ConfigMap is released and kept.
func TestIdentityLosingItsBindingKeepsRetainedChildren(t *testing.T) {
	ns := clustertest.Namespace(t)
	c, sa, cm := startRetainerIdentity(t, ns)
	cs := kubernetes.NewForConfigOrDie(clustertest.Config())
	binding, err := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), ns+"-"+sa, metav1.GetOptions{})
	must(t, err)
	must(t, cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{}))
	identityRefusesConfigMaps(t, ns, sa)
	refusedRetainerDeletion(t, c, ns, cm, "list the children of Retainer "+ns+"/g")
	binding.ResourceVersion = ""
	_, err = cs.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{})
	must(t, err)
	retainerReleased(t, c, ns, cm)
}

func serviceAccountClient(t *testing.T, ns, name string) *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(serviceAccountConfig(t, ns, name))
}

// TestIdentityNarrowedRoleKeepsRetainedChildren: as
// TestIdentityLosingItsBindingKeepsRetainedChildren, but the role is
// narrowed instead (it still grants the Retainer's ServiceAccounts, no more
// its ConfigMaps: a role regenerated after a template edit dropped the
// child): a kind the identity watches children of is one it wrote, and
// its refused list is a refusal, not an absence.
func TestIdentityNarrowedRoleKeepsRetainedChildren(t *testing.T) {
	ns := clustertest.Namespace(t)
	c, sa, cm := startRetainerIdentity(t, ns)
	cs := kubernetes.NewForConfigOrDie(clustertest.Config())
	setRules := func(rules []rbacv1.PolicyRule) {
		role, err := cs.RbacV1().ClusterRoles().Get(context.Background(), ns+"-"+sa, metav1.GetOptions{})
		must(t, err)
		role.Rules = rules
		_, err = cs.RbacV1().ClusterRoles().Update(context.Background(), role, metav1.UpdateOptions{})
		must(t, err)
	}
	setRules([]rbacv1.PolicyRule{retainerRules[1], {APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: retainerRules[0].Verbs}})
	identityRefusesConfigMaps(t, ns, sa)
	refusedRetainerDeletion(t, c, ns, cm, "list the children of Retainer "+ns+"/g", "configmaps")
	setRules(retainerRules)
	retainerReleased(t, c, ns, cm)
}
