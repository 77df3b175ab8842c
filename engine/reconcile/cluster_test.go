package reconcile

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// clusterFuncs is a Cluster of the funcs a test sets; it caches and
// watches no child kind, and what it is not given fails.
type clusterFuncs struct {
	load  LoadFunc
	modes BindingModes
}

var errNotInTest = errors.New("not served in this test")

func (clusterFuncs) ChildKinds() []schema.GroupVersionKind { return nil }

func (clusterFuncs) WatchKind(context.Context, schema.GroupVersionKind) error { return nil }

func (clusterFuncs) Owned(context.Context, string, types.UID) ([]*unstructured.Unstructured, error) {
	return nil, errNotInTest
}

func (c clusterFuncs) BindingMode(ctx context.Context, class string) (string, error) {
	if c.modes == nil {
		return "", errNotInTest
	}
	return c.modes(ctx, class)
}

func (clusterFuncs) Read(context.Context, schema.GroupVersionKind, string) ([]*unstructured.Unstructured, error) {
	return nil, errNotInTest
}

func (c clusterFuncs) Load(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if c.load == nil {
		return nil, errNotInTest
	}
	return c.load(ctx, meta)
}
