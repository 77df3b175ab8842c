package operator_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// limitedUser is a ServiceAccount bound to a ClusterRole of its own (both
// of its name), for an operator that acts as it: Config is the admin
// config impersonating it. The API server (RBAC on) then enforces what
// the operator may do; the test's end deletes the role and its binding.
type limitedUser struct {
	t        *testing.T
	cs       *kubernetes.Clientset
	ns, name string
}

// newLimitedUser creates the ServiceAccount name in ns with rules.
func newLimitedUser(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) *limitedUser {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	must(t, err)
	u := &limitedUser{t: t, cs: cs, ns: ns, name: name}
	ctx := context.Background()
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(t, err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return u
}

// Username is the user the API server names in its refusals.
func (u *limitedUser) Username() string { return "system:serviceaccount:" + u.ns + ":" + u.name }

// Config is the admin config impersonating the ServiceAccount.
func (u *limitedUser) Config() *rest.Config {
	cfg := rest.CopyConfig(clustertest.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: u.Username()}
	return cfg
}

// SetRules replaces the rules of the ServiceAccount's ClusterRole.
func (u *limitedUser) SetRules(rules []rbacv1.PolicyRule) {
	u.t.Helper()
	ctx := context.Background()
	role, err := u.cs.RbacV1().ClusterRoles().Get(ctx, u.name, metav1.GetOptions{})
	must(u.t, err)
	role.Rules = rules
	_, err = u.cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	must(u.t, err)
}

// allVerbs are the verbs of a resource's rule.
var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// childResources are the resources of the default allowed and data kinds,
// by API group.
var childResources = map[string][]string{
	"":                  {"pods", "services", "configmaps", "persistentvolumeclaims", "serviceaccounts"},
	"apps":              {"deployments", "statefulsets", "daemonsets"},
	"batch":             {"jobs", "cronjobs"},
	"networking.k8s.io": {"ingresses", "networkpolicies"},
	"policy":            {"poddisruptionbudgets"},
	"autoscaling":       {"horizontalpodautoscalers"},
}

// operatorRules are what an operator serving the kinds of the API groups
// crGroups needs for its own work (CRDs, its CRs, Events, Leases,
// StorageClasses), and every verb on the children's resources but those
// refused names (resource: verbs).
func operatorRules(crGroups []string, refused map[string][]string) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: allVerbs},
		{APIGroups: crGroups, Resources: []string{"*"}, Verbs: allVerbs},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: allVerbs},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: allVerbs},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		// The release key, as config/rbac/release_key_role.yaml grants it
		// (a ClusterRole here: operatortest puts the key in the test's
		// namespace).
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cueop-release-key"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	}
	for group, resources := range childResources {
		for _, r := range resources {
			verbs := slices.DeleteFunc(slices.Clone(allVerbs), func(v string) bool { return slices.Contains(refused[r], v) })
			if len(verbs) > 0 {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{r}, Verbs: verbs})
			}
		}
	}
	return rules
}
