package identity

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ImpersonateName names the Role, in the identity namespace, that lets the
// operator impersonate the kinds' ServiceAccounts, and its RoleBinding.
const ImpersonateName = Prefix + "impersonate"

// labels mark every object this package writes.
var labels = map[string]string{"app.kubernetes.io/name": "cueop"}

// Identity is one kind's ServiceAccount and where it is bound.
type Identity struct {
	Kind           Kind
	ServiceAccount ServiceAccount
	// Namespaces are those the kind is bound in (RoleBindings); nil is
	// every namespace (a ClusterRoleBinding).
	Namespaces []string
}

// For is the identity of k under the administrator's cfg.
func For(k Kind, cfg *Config) Identity {
	return Identity{Kind: k, ServiceAccount: cfg.For(k.GroupKind, k.CRDName()), Namespaces: cfg.BoundNamespaces(k.GroupKind)}
}

// RoleName names the kind's ClusterRole and its bindings: the default
// name of its ServiceAccount, whatever the ServiceAccount is.
func (id Identity) RoleName() string { return DefaultName(id.Kind.CRDName()) }

// clusterRoleName names the ClusterRole of the cluster-scoped rights of a
// kind bound in chosen namespaces (a RoleBinding grants no cluster-scoped
// resource): cueop-cluster:<crdName>. A colon is in no CRD name, so it is
// no other kind's name (a suffix would be: "-cluster" ends a valid group,
// and the kind of plural blogs in group blog.example.com-cluster would
// take blog.example.com's).
func (id Identity) clusterRoleName() string {
	return DefaultName("cluster:" + id.Kind.CRDName())
}

// String is one line: the kind, its ServiceAccount, where it is bound and,
// by resource, the verbs it is granted.
func (id Identity) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s as %s", id.Kind.GroupKind, id.ServiceAccount)
	if id.Namespaces != nil {
		fmt.Fprintf(&b, " in %s", strings.Join(id.Namespaces, ","))
	}
	var parts []string
	for _, r := range id.Kind.Rules() {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				parts = append(parts, resourceName(g, res)+" "+strings.Join(r.Verbs, ","))
			}
		}
	}
	if len(parts) == 0 {
		parts = []string{"nothing"}
	}
	return b.String() + ": " + strings.Join(parts, "; ")
}

// resourceName is res of group g as kubectl spells it: plural.group,
// then the subresource (redisclusters.cache.example.com/finalizers).
func resourceName(g, res string) string {
	base, sub, ok := strings.Cut(res, "/")
	if g != "" {
		base += "." + g
	}
	if ok {
		base += "/" + sub
	}
	return base
}

// Objects are the identities' ServiceAccounts (once each), their
// ClusterRoles and bindings, then the Role and RoleBinding that let
// operator impersonate them (Impersonation). Identities are sorted by
// kind.
func Objects(ids []Identity, operator ServiceAccount) []client.Object {
	ids = slices.Clone(ids)
	sort.Slice(ids, func(i, j int) bool { return ids[i].Kind.GroupKind.String() < ids[j].Kind.GroupKind.String() })
	var objs []client.Object
	seen := map[ServiceAccount]bool{}
	for _, id := range ids {
		if !seen[id.ServiceAccount] {
			seen[id.ServiceAccount] = true
			objs = append(objs, serviceAccount(id.ServiceAccount))
		}
	}
	for _, id := range ids {
		objs = append(objs, id.roles()...)
	}
	return append(objs, Impersonation(ids, operator)...)
}

// roles are the kind's ClusterRole and its ClusterRoleBinding, or, bound in
// chosen namespaces, a RoleBinding of it in each, and its cluster-scoped
// rights in a second ClusterRole with a ClusterRoleBinding.
func (id Identity) roles() []client.Object {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: id.ServiceAccount.Namespace, Name: id.ServiceAccount.Name}}
	if id.Namespaces == nil {
		return []client.Object{clusterRole(id.RoleName(), id.Kind.Rules()), clusterRoleBinding(id.RoleName(), subject)}
	}
	objs := []client.Object{clusterRole(id.RoleName(), id.Kind.NamespacedRules())}
	for _, ns := range id.Namespaces {
		objs = append(objs, roleBinding(ns, id.RoleName(), "ClusterRole", id.RoleName(), subject))
	}
	if cluster := id.Kind.ClusterRules(); len(cluster) > 0 {
		name := id.clusterRoleName()
		objs = append(objs, clusterRole(name, cluster), clusterRoleBinding(name, subject))
	}
	return objs
}

// Impersonation are, in each namespace of the identities' ServiceAccounts,
// a Role granting impersonate on exactly those ServiceAccounts (the API
// server checks the impersonation of a ServiceAccount as verb impersonate
// on serviceaccounts, by name, in its namespace) and its RoleBinding to
// operator.
func Impersonation(ids []Identity, operator ServiceAccount) []client.Object {
	names := map[string][]string{}
	for _, id := range ids {
		sa := id.ServiceAccount
		if !slices.Contains(names[sa.Namespace], sa.Name) {
			names[sa.Namespace] = append(names[sa.Namespace], sa.Name)
		}
	}
	namespaces := make([]string, 0, len(names))
	for ns := range names {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operator.Namespace, Name: operator.Name}}
	var objs []client.Object
	for _, ns := range namespaces {
		sort.Strings(names[ns])
		rule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: names[ns], Verbs: []string{"impersonate"}}
		objs = append(objs, &rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: meta(ns, ImpersonateName), Rules: []rbacv1.PolicyRule{rule}},
			roleBinding(ns, ImpersonateName, "Role", ImpersonateName, subject))
	}
	return objs
}

func serviceAccount(sa ServiceAccount) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(sa.Namespace, sa.Name)}
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	if rules == nil {
		rules = []rbacv1.PolicyRule{}
	}
	return &rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta("", name), Rules: rules}
}

func clusterRoleBinding(name string, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: meta("", name),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}
}

func roleBinding(ns, name, roleKind, role string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: meta(ns, name),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: role}, Subjects: subjects}
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

func meta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: maps.Clone(labels)}
}
