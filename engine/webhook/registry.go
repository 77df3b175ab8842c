package webhook

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Converter converts objects of one kind between its served versions
// (engine/convert's Converter). toVersion is a version name ("v2").
type Converter interface {
	Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// Registry holds the converter of each kind, by group and kind. Reads take
// no lock (a copy-on-write map): a conversion never waits for a reload or
// a reconcile.
type Registry struct {
	mu      sync.Mutex // writers only
	m       atomic.Pointer[map[schema.GroupKind]Converter]
	changed chan struct{} // closed and replaced by each Set
	// converting is closed by the first Set of a converter (Converting).
	converting     chan struct{}
	convertingOnce sync.Once
}

// Converting is closed once a kind has a converter: from then on the
// endpoint may be asked to convert, and needs its certificate.
func (r *Registry) Converting() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.converting == nil {
		r.converting = make(chan struct{})
	}
	return r.converting
}

// Changed is closed by the next Set: a review held for a converter
// (Handler.Loaded) looks again then.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// Get is the converter of gk.
func (r *Registry) Get(gk schema.GroupKind) (Converter, bool) {
	m := r.m.Load()
	if m == nil {
		return nil, false
	}
	c, ok := (*m)[gk]
	return c, ok
}

// Set makes c the converter of gk; a nil c removes gk.
func (r *Registry) Set(gk schema.GroupKind, c Converter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[schema.GroupKind]Converter{}
	if m := r.m.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	if c == nil {
		delete(next, gk)
	} else {
		next[gk] = c
		if r.converting == nil {
			r.converting = make(chan struct{})
		}
		r.convertingOnce.Do(func() { close(r.converting) })
	}
	r.m.Store(&next)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Kinds are the kinds with a converter.
func (r *Registry) Kinds() []schema.GroupKind {
	m := r.m.Load()
	if m == nil {
		return nil
	}
	out := make([]schema.GroupKind, 0, len(*m))
	for k := range *m {
		out = append(out, k)
	}
	return out
}
