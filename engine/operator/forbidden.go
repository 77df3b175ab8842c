package operator

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// listRefused is the API server's refusal, by its authorization, of a list
// of resource in the namespaces the operator serves (one object at most,
// metadata only, as b's identity); nil when the list is answered or fails otherwise. A
// watch so refused never syncs, and its informer would only retry: the
// refusal itself is what the reconcile that needs the watch reports
// (wellknown.ReasonForbidden), and no informer is started.
func (b *bundle) listRefused(ctx context.Context, resource schema.GroupVersionResource) error {
	for _, ns := range b.listNamespaces() {
		_, err := b.meta.Resource(resource).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsForbidden(err) {
			return err
		}
	}
	return nil
}
