package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prune deletes live, a child that is no longer desired, with background
// propagation. The delete carries live's UID as a precondition, so an object
// that has replaced live under the same name is never deleted. An object
// that is already gone, or replaced, counts as pruned.
func (a *Applier) Prune(ctx context.Context, live *unstructured.Unstructured) error {
	if err := a.delete(ctx, live, metav1.DeletePropagationBackground); err != nil {
		return fmt.Errorf("%s prune failed: %w", subject(live), err)
	}
	return nil
}

// Delete deletes live with propagation policy p, by UID as Prune does:
// ordered deletion deletes each wave in the foreground, so that a child is
// gone only once its dependents are.
func (a *Applier) Delete(ctx context.Context, live *unstructured.Unstructured, p metav1.DeletionPropagation) error {
	if err := a.delete(ctx, live, p); err != nil {
		return fmt.Errorf("%s delete failed: %w", subject(live), err)
	}
	return nil
}

// delete deletes live by UID with propagation policy p. NotFound and a failed UID precondition (a
// Conflict: the name now belongs to another object) are success.
func (a *Applier) delete(ctx context.Context, live *unstructured.Unstructured, p metav1.DeletionPropagation) error {
	uid := live.GetUID()
	if uid == "" {
		return errors.New("no uid: pass the live object")
	}
	err := a.Client.Delete(ctx, live,
		client.Preconditions{UID: &uid}, client.PropagationPolicy(p))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
