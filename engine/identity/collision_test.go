package identity

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
)

// TestObjectNamesNeverCollide: a kind bound in chosen namespaces has a
// second ClusterRole for its cluster-scoped rights. Its name must be no
// other kind's: the group blog.example.com-cluster is a valid one, and a
// kind of it (plural blogs) named as blog's cluster role was would replace
// it, binding and all, when applied.
func TestObjectNamesNeverCollide(t *testing.T) {
	other := Kind{GroupKind: schema.GroupKind{Group: "blog.example.com-cluster", Kind: "Blog"}, Plural: "blogs",
		Children: render.MustKindSet("Secret")}
	cfg := &Config{}
	if err := cfg.ParseNamespaces([]string{"Blog.blog.example.com=a"}); err != nil {
		t.Fatal(err)
	}
	op := ServiceAccount{Namespace: "cueop-system", Name: "cueop-controller"}
	seen := map[string]bool{}
	for _, o := range Objects([]Identity{For(blog, cfg), For(other, cfg)}, op) {
		key := o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			t.Errorf("two objects %s: one kind's replaces the other's", key)
		}
		seen[key] = true
	}
}

// TestOperatorPatchesOnlyItsCRDs: the operator's own role may create
// CRDs (a create cannot be limited by name) but patch, and update the
// status of, only its kinds' CRDs: with patch on every CRD its identity
// could point another team's CRD's conversion at itself and read every
// object of it.
func TestOperatorPatchesOnlyItsCRDs(t *testing.T) {
	for _, r := range Operator([]Kind{blog}, nil) {
		if r.APIGroups[0] != "apiextensions.k8s.io" {
			continue
		}
		for _, v := range r.Verbs {
			if (v == "patch" || v == "update") && !slices.Equal(r.ResourceNames, []string{"blogs.blog.example.com"}) {
				t.Errorf("%s on %v of CRDs %v, want blogs.blog.example.com only", v, r.Resources, r.ResourceNames)
			}
		}
	}
}
