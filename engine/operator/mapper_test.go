package operator

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestCachedMapper: a mapping found is reused until it expires; a kind not
// found is asked again every time.
func TestCachedMapper(t *testing.T) {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	def := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	def.Add(pod, meta.RESTScopeNamespace)
	inner := &countingMapper{RESTMapper: def}
	c := newCachedMapper(inner)
	now := time.Unix(0, 0)
	c.now = func() time.Time { return now }
	for range 3 {
		m, err := c.RESTMapping(pod.GroupKind())
		if err != nil || m.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("mapping %v, %v", m, err)
		}
	}
	if inner.calls != 1 {
		t.Errorf("%d lookups, want 1", inner.calls)
	}
	now = now.Add(mappingTTL)
	if _, err := c.RESTMapping(pod.GroupKind()); err != nil || inner.calls != 2 {
		t.Errorf("after expiry: %d lookups (want 2), %v", inner.calls, err)
	}
	for range 2 {
		if _, err := c.RESTMapping(schema.GroupKind{Kind: "Nope"}); err == nil {
			t.Error("a missing kind mapped")
		}
	}
	if inner.calls != 4 {
		t.Errorf("%d lookups, want 4: a missing kind is asked every time", inner.calls)
	}
}
