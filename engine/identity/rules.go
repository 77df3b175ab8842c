package identity

import (
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// ChildVerbs are what cueop does to the children it owns.
var ChildVerbs = []string{"get", "list", "watch", "create", "patch", "update", "delete"}

// ReadVerbs are what cueop does to the objects a template references.
var ReadVerbs = []string{"get", "list", "watch"}

var (
	storageClasses = schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}
	claims         = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

// Kind is what one kind's golden cases and samples render and reference.
type Kind struct {
	// GroupKind is the kind's identity: its CRs' group and kind.
	GroupKind schema.GroupKind
	// Plural is the resource of its CRs.
	Plural string
	// Children are the kinds of the children it renders; References the
	// kinds it references.
	Children, References render.KindSet
}

// CRDName is plural.group, the name of the kind's CRD.
func (k Kind) CRDName() string { return template.CRDName(k.Plural, k.GroupKind.Group) }

// Resource is the resource of the kind's CRs.
func (k Kind) Resource() schema.GroupResource {
	return schema.GroupResource{Group: k.GroupKind.Group, Resource: k.Plural}
}

// NamespacedRules are the kind's rights on namespaced resources: its
// children, the kinds it only references, and its CRs' finalizers when it
// has children (OwnerReferencesPermissionEnforcement checks them for
// blockOwnerDeletion).
func (k Kind) NamespacedRules() []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	if len(k.Children) > 0 {
		fin := k.Resource()
		fin.Resource += "/finalizers"
		rules = append(rules, RulesFor([]schema.GroupResource{fin}, "update")...)
	}
	rules = append(rules, RulesFor(Resources(k.Children), ChildVerbs...)...)
	return append(rules, RulesFor(Resources(readOnly(k.References, k.Children)), ReadVerbs...)...)
}

// ClusterRules are the kind's rights on cluster-scoped resources: get on
// StorageClasses when it renders PersistentVolumeClaims (the wave gates
// read a Pending claim's class, reconcile.BindingModes), else none.
func (k Kind) ClusterRules() []rbacv1.PolicyRule {
	if !k.Children[claims] {
		return nil
	}
	return RulesFor([]schema.GroupResource{storageClasses}, "get")
}

// Rules are NamespacedRules and ClusterRules.
func (k Kind) Rules() []rbacv1.PolicyRule {
	return append(k.NamespacedRules(), k.ClusterRules()...)
}

// readOnly are the kinds of refs that are not in children (which have
// ReadVerbs already).
func readOnly(refs, children render.KindSet) render.KindSet {
	only := render.KindSet{}
	for gk := range refs {
		if !children[gk] {
			only[gk] = true
		}
	}
	return only
}

// Resources are the REST resources of kinds.
func Resources(kinds render.KindSet) []schema.GroupResource {
	out := make([]schema.GroupResource, 0, len(kinds))
	for gk := range kinds {
		out = append(out, schema.GroupResource{Group: gk.Group, Resource: template.Pluralize(strings.ToLower(gk.Kind))})
	}
	return out
}

// RulesFor grants verbs on resources with one rule per API group, groups
// and resources sorted.
func RulesFor(resources []schema.GroupResource, verbs ...string) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, r := range resources {
		byGroup[r.Group] = append(byGroup[r.Group], r.Resource)
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		res := byGroup[g]
		sort.Strings(res)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: slices.Compact(res), Verbs: slices.Clone(verbs)})
	}
	return rules
}
