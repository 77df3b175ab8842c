package reconcile

import (
	"context"
	"errors"

	"github.com/cueop/cueop/engine/template"
	"github.com/go-logr/logr"
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

// testRun is a run of a reconcile of cr with k by rec, as Reconcile makes
// it, with nothing observed yet.
func testRun(rec *Reconciler, k *template.Kind, cr *unstructured.Unstructured) *run {
	return rec.newRun(k, cr, logr.Discard())
}
