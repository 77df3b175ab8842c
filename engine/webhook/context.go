package webhook

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ContextConverter is a Converter that stops converting when ctx ends (a
// review whose caller has gone): engine/worker's, which converts in a
// worker process.
type ContextConverter interface {
	Converter
	ConvertContext(ctx context.Context, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// convertWith converts obj with c, within ctx when c takes one.
func convertWith(ctx context.Context, c Converter, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	if cc, ok := c.(ContextConverter); ok {
		return cc.ConvertContext(ctx, obj, toVersion)
	}
	return c.Convert(obj, toVersion)
}
