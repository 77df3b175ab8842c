package rbacgen

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/identity"
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
	cfg := &identity.Config{}
	if err := cfg.ParseNamespaces([]string{"Blog.blog.example.com=a"}); err != nil {
		t.Fatal(err)
	}
	op := identity.ServiceAccount{Namespace: "cueop-system", Name: "cueop-controller"}
	seen := map[string]bool{}
	for _, o := range Objects([]Identity{For(blog, cfg), For(other, cfg)}, op) {
		key := o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			t.Errorf("two objects %s: one kind's replaces the other's", key)
		}
		seen[key] = true
	}
}
