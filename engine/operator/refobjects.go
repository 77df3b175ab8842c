package operator

import (
	"container/list"
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
)

// referencedObjectsBytes bounds the referenced objects held whole between
// renders: a few of the largest objects the API server stores (about 1 MiB
// each), so that CRs reading the same object in a burst (a template edit
// rolling out) read it once.
const referencedObjectsBytes = 8 << 20

// objectLRU holds the referenced objects last read whole, by uid,
// resourceVersion (an object is immutable at a resourceVersion) and the
// apiVersion it was read at (templates may read one object at different
// versions of its kind, which the API server converts), the least
// recently used dropped beyond max bytes (counted as the bytes of their
// strings). It is safe for concurrent use; the objects it returns are
// shared and read only.
type objectLRU struct {
	mu    sync.Mutex
	max   int
	used  int
	order *list.List // of *lruEntry, most recently used first
	byKey map[string]*list.Element
}

type lruEntry struct {
	key  string
	obj  *unstructured.Unstructured
	size int
}

func newObjectLRU(maxBytes int) *objectLRU {
	return &objectLRU{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func lruKey(o *unstructured.Unstructured) string {
	return string(o.GetUID()) + "/" + o.GetResourceVersion() + "/" + o.GetAPIVersion()
}

// get returns the object meta stands for, at its resourceVersion, or nil.
func (c *objectLRU) get(meta *unstructured.Unstructured) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[lruKey(meta)]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).obj
}

// add keeps o, dropping the least recently used objects beyond the bound;
// an object larger than the bound is not kept.
func (c *objectLRU) add(o *unstructured.Unstructured) {
	size := render.ValueBytes(o.Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	key := lruKey(o)
	if _, ok := c.byKey[key]; ok || size > c.max {
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key: key, obj: o, size: size})
	c.used += size
	for c.used > c.max {
		last := c.order.Back()
		e := last.Value.(*lruEntry)
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}

// bytes is what the held objects count for.
func (c *objectLRU) bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// loadReferenced is the reconcilers' reconcile.LoadFunc: the object meta
// (listed by its metadata) read whole, from the objects last read or
// with one GET.
func (b *bundle) loadReferenced(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj := b.reads.objects.get(meta); obj != nil {
		return obj, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(meta.GroupVersionKind())
	if err := b.reader.Get(ctx, client.ObjectKeyFromObject(meta), obj); err != nil {
		return nil, err
	}
	obj.SetManagedFields(nil)
	b.reads.objects.add(obj)
	return obj, nil
}
