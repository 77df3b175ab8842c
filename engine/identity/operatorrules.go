package identity

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
)

// Operator are the rules of the operator's own ClusterRole: get, list and
// watch on every kind's CRs, patch on those of patch (a finalizer, the
// storage migration's managedFields), their status, the CRDs (for
// --install-crds) and their status (for the storage migration), each
// kind's cueop.dev Template object and its status, and events. A kind's children and references are its own identity's.
func Operator(kinds []Kind, patch []schema.GroupResource) []rbacv1.PolicyRule {
	var crs, status []schema.GroupResource
	for _, k := range kinds {
		crs = append(crs, k.Resource())
		status = append(status, schema.GroupResource{Group: k.GroupKind.Group, Resource: k.Plural + "/status"})
	}
	var rules []rbacv1.PolicyRule
	rules = append(rules, RulesFor(crs, ReadVerbs...)...)
	rules = append(rules, RulesFor(patch, "patch")...)
	rules = append(rules, RulesFor(status, "get", "patch", "update")...)
	rules = append(rules, RulesFor([]schema.GroupResource{{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}},
		"get", "list", "watch", "create")...)
	rules = append(rules, crdRules(kinds)...)
	rules = append(rules, RulesFor([]schema.GroupResource{{Group: "cueop.dev", Resource: "templates"}, {Group: "cueop.dev", Resource: "templates/status"}},
		"get", "list", "watch", "create", "patch")...)
	return append(rules, RulesFor([]schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}},
		"create", "patch")...)
}

// Shared are the rules of the shared identity, where every kind acts as the
// operator: Operator, and the union of every kind's rights, with get, list
// and watch on every readable kind rather than only the referenced ones.
func Shared(kinds []Kind, patch []schema.GroupResource, readable render.KindSet) []rbacv1.PolicyRule {
	union := Kind{Children: render.KindSet{}, References: readable}
	var finalizers []schema.GroupResource
	for _, k := range kinds {
		for gk := range k.Children {
			union.Children[gk] = true
		}
		finalizers = append(finalizers, schema.GroupResource{Group: k.GroupKind.Group, Resource: k.Plural + "/finalizers"})
	}
	rules := Operator(kinds, patch)
	rules = append(rules, RulesFor(finalizers, "update")...)
	rules = append(rules, RulesFor(Resources(union.Children), ChildVerbs...)...)
	rules = append(rules, RulesFor(Resources(readOnly(union.References, union.Children)), ReadVerbs...)...)
	return append(rules, union.ClusterRules()...)
}

// Children is the union of the kinds' child kinds.
func Children(kinds []Kind) render.KindSet {
	out := render.KindSet{}
	for _, k := range kinds {
		for gk := range k.Children {
			out[gk] = true
		}
	}
	return out
}

// crdRules grant patch on the kinds' CRDs and get and update on their
// status, by name: a create cannot be limited by name, but with patch on
// every CRD the operator's identity could point another team's CRD's
// conversion at itself and read every object of it. No kinds, no rule
// (a rule without names grants every name).
func crdRules(kinds []Kind) []rbacv1.PolicyRule {
	var names []string
	for _, k := range kinds {
		names = append(names, k.CRDName())
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: names, Verbs: []string{"patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"}, ResourceNames: slices.Clone(names), Verbs: []string{"get", "update"}},
	}
}
