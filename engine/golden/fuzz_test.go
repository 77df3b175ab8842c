package golden_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// FuzzParseObjects feeds random bytes to the parsers of golden cases
// (observed.yaml, parent.yaml and `cueop render -f`): each must return a
// result or an error, never panic, and what they return must be usable.
func FuzzParseObjects(f *testing.F) {
	for _, seed := range []string{
		"",
		"---",
		"null\n---\n~\n",
		"apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: x}\nspec: {replicas: 3}\n",
		"apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: x, namespace: ns}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: |\n    line\n",
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}`,
		"apiVersion: 7\nkind: [a]\n",
		"kind: Pod\n",
		"- a\n- b\n",
		"a: &x [*x]\n",
		"a: &a [1,2]\nb: &b [*a,*a,*a]\nc: &c [*b,*b,*b]\nd: [*c,*c,*c]\n",
		"metadata: {name: 5, namespace: [1]}\napiVersion: v1\nkind: Pod\n",
		"\tkey: value\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n--- \n--- \t\n",
		"? complex\n: key\n",
		"!!binary aGVsbG8=\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: a}}]\n",
		"\xff\xfe\x00",
		"apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: \n",
		// Found by the fuzzer (issue 54): v2 is a served version of
		// RedisCluster, so a v2 parent is accepted.
		"apiVersion: cache.example.com/v2\nkind: RedisCluster\n",
		"apiVersion: cache.example.com/v2\nkind: RedisCluster\nmetadata: {name: x}\nspec: {size: 3}\n",
		"apiVersion: cache.example.com/v3\nkind: RedisCluster\nmetadata: {name: x}\n",
		"apiVersion: cache.example.com\nkind: RedisCluster\nmetadata: {name: x}\n",
		"apiVersion: other.example.com/v1\nkind: RedisCluster\nmetadata: {name: x}\n",
	} {
		f.Add([]byte(seed))
	}
	set := templatetest.Load(f, "../../templates")
	k := set.Lookup("cache.example.com", "RedisCluster")
	if k == nil {
		f.Fatal("no RedisCluster kind in ../../templates")
	}
	// The versions a parent may be at: every served version of the kind,
	// the hub and each spoke.
	served := map[string]bool{}
	for _, v := range k.Versions {
		served[v.Name] = true
	}
	if want := k.Resource.GroupVersionKind(); !served[want.Version] || len(served) < 2 {
		f.Fatalf("RedisCluster serves %v, want its hub %s and at least one spoke", served, want.Version)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := golden.ParseObjects(data)
		if err == nil {
			for i, o := range objs {
				if o == nil || o.Object == nil {
					t.Fatalf("document %d: nil object without an error", i+1)
				}
				_ = o.GroupVersionKind()
				_ = o.GetName()
			}
		} else if err.Error() == "" {
			t.Fatal("empty error")
		}
		p, err := golden.ParseParent(data, k)
		switch {
		case err != nil:
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error")
			}
		case p == nil:
			t.Fatal("no parent and no error")
		case p.GroupVersionKind().GroupKind() != k.Resource.GroupVersionKind().GroupKind():
			t.Fatalf("parent of kind %s accepted for %s", p.GroupVersionKind(), k.Resource.GroupVersionKind())
		case !served[p.GroupVersionKind().Version]:
			t.Fatalf("parent at version %s accepted, served are %v", p.GetAPIVersion(), served)
		case p.GetName() == "" || p.GetNamespace() == "":
			t.Fatalf("parent accepted without a name or a namespace: %q/%q", p.GetNamespace(), p.GetName())
		}
	})
}
