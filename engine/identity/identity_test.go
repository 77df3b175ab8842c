package identity

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDefaults(t *testing.T) {
	c := &Config{}
	gk := schema.GroupKind{Group: "cache.example.com", Kind: "RedisCluster"}
	sa := c.For(gk, "redisclusters.cache.example.com")
	if sa.Namespace != DefaultNamespace || sa.Name != "cueop-redisclusters.cache.example.com" {
		t.Fatalf("default = %v", sa)
	}
	if u := sa.Username(); u != "system:serviceaccount:cueop-system:cueop-redisclusters.cache.example.com" {
		t.Fatalf("username = %s", u)
	}
	long := DefaultName(strings.Repeat("a", 300) + ".example.com")
	if errs := validation.IsDNS1123Subdomain(long); len(errs) > 0 || long == DefaultName(strings.Repeat("a", 301)+".example.com") {
		t.Fatalf("long name %q: %v", long, errs)
	}
	if !c.Bound(gk, "anywhere") {
		t.Fatal("unbound by default")
	}
}

func TestParse(t *testing.T) {
	c := &Config{Namespace: "ops"}
	if err := c.ParseServiceAccounts([]string{"RedisCluster.cache.example.com=team-a"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ParseNamespaces([]string{"RedisCluster.cache.example.com=b,a", "RedisCluster.cache.example.com=a,c"}); err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "cache.example.com", Kind: "RedisCluster"}
	if sa := c.For(gk, "x"); sa != (ServiceAccount{"ops", "team-a"}) {
		t.Fatalf("override = %v", sa)
	}
	if got := c.BoundNamespaces(gk); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("namespaces = %v", got)
	}
	if c.Bound(gk, "d") || !c.Bound(gk, "c") || !c.Bound(gk, "") {
		t.Fatal("Bound")
	}
	for _, bad := range []string{"RedisCluster=x", "RedisCluster.cache.example.com", "RedisCluster.cache.example.com=Bad_Name"} {
		if err := c.ParseServiceAccounts([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := c.ParseNamespaces([]string{"RedisCluster.cache.example.com=a,,b"}); err == nil {
		t.Error("empty namespace accepted")
	}
}
