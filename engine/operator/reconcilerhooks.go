package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/reconcile"
)

// kindCluster is a kind's reconcile.Cluster: the bundle of its identity,
// whose caches hold the kind's children (children.go, owned.go), the
// objects its templates reference (references.go, refobjects.go) and the
// StorageClasses' binding modes (storageclasses.go).
type kindCluster struct {
	b     *bundle
	modes *bindingModes
}

func clusterOf(b *bundle) kindCluster { return kindCluster{b: b, modes: b.modes} }

func (c kindCluster) ChildKinds() []schema.GroupVersionKind { return c.b.watchedKinds() }

func (c kindCluster) WatchKind(ctx context.Context, gvk schema.GroupVersionKind) error {
	return c.b.watchKind(ctx, gvk)
}

func (c kindCluster) Owned(ctx context.Context, ns string, owner types.UID) ([]*unstructured.Unstructured, error) {
	return c.b.ownedLive(ctx, ns, owner)
}

func (c kindCluster) BindingMode(ctx context.Context, class string) (string, error) {
	return c.modes.Mode(ctx, class)
}

func (c kindCluster) Read(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error) {
	return c.b.readReferenced(ctx, gvk, namespace)
}

func (c kindCluster) Load(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.b.loadReferenced(ctx, meta)
}

// kindHost is a kind's reconcile.Host (kindRunner.hostOf).
type kindHost struct {
	keys    *releaseKeys
	bound   func(namespace string) error                   // forbidden.go; nil: bound everywhere
	failing func(context.Context, reconcile.StatusFailing) // statusfailing.go
}

func (h kindHost) Bound(namespace string) error {
	if h.bound == nil {
		return nil
	}
	return h.bound(namespace)
}

func (h kindHost) ReleaseKey(ctx context.Context) ([]byte, error) { return h.keys.key(ctx) } // releasekey.go

func (h kindHost) StatusFailing(ctx context.Context, st reconcile.StatusFailing) { h.failing(ctx, st) }
