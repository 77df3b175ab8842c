package operator

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/template"
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

// boundIn is the reconcile.Host.Bound of k's kind: nil (bound
// everywhere) without Options.Identities, else why the kind may not act in
// a namespace the administrator did not bind it in.
func (o *Operator) boundIn(k *template.Kind) func(namespace string) error {
	ids := o.opts.Identities
	if ids == nil {
		return nil
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	return func(ns string) error {
		if ids.Bound(gk, ns) {
			return nil
		}
		return fmt.Errorf("kind %s is not bound in namespace %s: it is bound in namespaces %s only", gk, ns, strings.Join(ids.BoundNamespaces(gk), ", "))
	}
}
