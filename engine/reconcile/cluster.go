package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Cluster is what a reconciler reads and watches through the operator,
// beside its clients: the operator's identity of the kind serves it. A
// reconciler without one (tests) lists no children, watches no kind, reads
// no reference and no StorageClass, and confirms its prunes with its cache.
type Cluster interface {
	// ChildKinds returns the kinds whose children Reconciler.Children
	// caches: a reconcile lists the children of each (observe.go).
	ChildKinds() []schema.GroupVersionKind
	// WatchKind makes Reconciler.Children cache the children of a kind at
	// a version; it is called for every kind and version a render produces
	// before its children are applied.
	WatchKind(ctx context.Context, gvk schema.GroupVersionKind) error
	// Owned lists a CR's children from the API server, never the cache
	// (deletion.go: OwnedFunc): what a finalizer is taken off on, and what
	// confirms a prune.
	Owned(ctx context.Context, ns string, owner types.UID) ([]*unstructured.Unstructured, error)
	// BindingMode reads a StorageClass's volumeBindingMode, for the gates
	// (gateready.go: BindingModes).
	BindingMode(ctx context.Context, class string) (string, error)
	// Read lists the objects of a kind templates reference, by their
	// metadata; Load reads one of them whole, for a render (references.go:
	// ReadFunc, LoadFunc).
	Read(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error)
	Load(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// Host is what a reconciler asks and tells the operator that runs its
// kind. A reconciler without one (tests) acts in every namespace, releases
// children with no proof (and adopts none by its released-from mark), and
// tells nobody of its status writes.
type Host interface {
	// Bound says why the kind may not act in a namespace, nil when it may
	// (forbidden.go: wellknown.ReasonNamespaceNotBound).
	Bound(namespace string) error
	// ReleaseKey is the key of the proofs a released child carries, that
	// cueop released it (releaseproof.go).
	ReleaseKey(ctx context.Context) ([]byte, error)
	// StatusFailing is told the kind's state of its status writes when the
	// first CR's fails and when the last failing one is written
	// (statusfail.go).
	StatusFailing(ctx context.Context, st StatusFailing)
}

// bindingModes reads StorageClasses for the gates; nil: a Pending claim is
// not ready for them.
func (r *Reconciler) bindingModes() BindingModes {
	if r.Cluster == nil {
		return nil
	}
	return r.Cluster.BindingMode
}

// tellStatusFailing tells the host the kind's state of its status writes.
func (r *Reconciler) tellStatusFailing(ctx context.Context, st StatusFailing) {
	if r.Host != nil {
		r.Host.StatusFailing(ctx, st)
	}
}
