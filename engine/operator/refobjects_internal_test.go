package operator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestObjectLRUBounded: objects are found by uid and resourceVersion (a new
// version is a miss), the least recently used go beyond the byte bound, and
// an object larger than the bound is not kept.
func TestObjectLRUBounded(t *testing.T) {
	cm := func(uid, rv string, bytes int) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"d": strings.Repeat("x", bytes)}}}
		o.SetUID(types.UID(uid))
		o.SetResourceVersion(rv)
		return o
	}
	c := newObjectLRU(3000)
	c.add(cm("a", "1", 1000))
	c.add(cm("b", "1", 1000))
	if c.get(cm("a", "1", 0)) == nil || c.get(cm("a", "2", 0)) != nil {
		t.Fatal("a found by uid and resourceVersion: want a hit at 1 and a miss at 2")
	}
	c.add(cm("c", "1", 1000)) // over the bound: b, the least recently used, goes
	if c.get(cm("b", "1", 0)) != nil || c.get(cm("a", "1", 0)) == nil || c.get(cm("c", "1", 0)) == nil {
		t.Error("b should have gone, a and c stayed")
	}
	if c.bytes() > 3000 {
		t.Errorf("%d bytes held, bound 3000", c.bytes())
	}
	c.add(cm("huge", "1", 5000))
	if c.get(cm("huge", "1", 0)) != nil || c.get(cm("a", "1", 0)) == nil {
		t.Error("an object over the bound was kept, or pushed others out")
	}
}

// TestObjectLRUKeyedByVersion: one object read at two versions of its kind
// (two templates referencing autoscaling/v1 and autoscaling/v2 of the same
// HorizontalPodAutoscaler) is two entries: a read at one version never
// gets the object converted to the other.
func TestObjectLRUKeyedByVersion(t *testing.T) {
	at := func(apiVersion string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"v": apiVersion}}}
		o.SetAPIVersion(apiVersion)
		o.SetKind("HorizontalPodAutoscaler")
		o.SetUID("u")
		o.SetResourceVersion("7")
		return o
	}
	c := newObjectLRU(3000)
	c.add(at("autoscaling/v2"))
	if got := c.get(at("autoscaling/v1")); got != nil {
		t.Fatalf("a read at autoscaling/v1 got the object read at %s", got.GetAPIVersion())
	}
	if c.get(at("autoscaling/v2")) == nil {
		t.Fatal("a read at autoscaling/v2 missed the object read at autoscaling/v2")
	}
}
