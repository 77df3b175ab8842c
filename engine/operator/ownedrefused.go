package operator

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cannotHaveWritten tells, for a list of gr in ns that b's identity was
// refused (err, Forbidden), that the identity may neither create nor
// patch gr there either: it cannot have written a child of gr, nor could
// it release or delete one, so ownedLive leaves gr out instead of
// stalling every prune and deletion of the kind on a kind its role never
// grants (a kind's role lists its own child kinds only, not every allowed
// and data kind). The operator's own identity, and an identity that may
// write gr but not list it, keep the refusal: never taken for absent.
func (b *bundle) cannotHaveWritten(ctx context.Context, gr schema.GroupResource, ns string, err error) bool {
	if b.sa == nil || !apierrors.IsForbidden(err) {
		return false
	}
	for _, verb := range []string{"create", "patch"} {
		if allowed, known := b.may(ctx, verb, gr, ns); allowed || !known {
			return false
		}
	}
	return true
}

// may asks the API server whether b's identity may verb gr in ns (a
// SelfSubjectAccessReview, made as the identity); known is false when the
// review itself failed.
func (b *bundle) may(ctx context.Context, verb string, gr schema.GroupResource, ns string) (allowed, known bool) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: gr.Group, Resource: gr.Resource}}}
	if err := b.applier.Client.Create(ctx, review); err != nil {
		return false, false
	}
	return review.Status.Allowed, true
}

// notItsKind tells, for the list of an allowed kind's children that an
// identity's discovery (discoverChildren) was refused, that the kind is
// none of the identity's: its role lists its own child kinds only, and one
// refused list must not keep the identity from watching the kinds it does
// write. Such a kind is watched once a template renders it, and is then
// Forbidden (wellknown.ReasonForbidden). The operator's own identity still
// stops on the refusal.
func (b *bundle) notItsKind(err error) bool {
	return b.sa != nil && apierrors.IsForbidden(err)
}
