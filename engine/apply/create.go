package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrExists is what Apply returns, wrapped, when it was told a child is
// absent (live nil) and an object of that name exists: it sent a
// create-only apply, which the API server refused, and changed nothing.
var ErrExists = errors.New("an object of this name exists")

// IsExists reports whether err is, or wraps, ErrExists.
func IsExists(err error) bool { return errors.Is(err, ErrExists) }

// createOnly is the resourceVersion Apply sends with a child it believes
// absent: no object can have it (the largest 64-bit number). The API server
// checks a resourceVersion sent with an apply against the object that
// exists (a Conflict when it differs) and wipes it when the apply creates
// the object, so the apply creates the child or changes nothing: cueop
// never takes over an object it was not told about, and it costs no request
// more than the apply.
const createOnly = "18446744073709551615"

// guardCreate makes obj, as stamp returned it (its metadata a copy),
// create-only.
func guardCreate(obj *unstructured.Unstructured) {
	obj.Object["metadata"].(map[string]any)["resourceVersion"] = createOnly
}

// createRefused is the error of a create-only apply of obj the API server
// refused with err because an object of that name exists, nil for any
// other error.
func createRefused(obj *unstructured.Unstructured, err error) error {
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return nil
	}
	return fmt.Errorf("%s: %w: the create-only apply changed nothing", subject(obj), ErrExists)
}

// Get reads desired's object (same apiVersion, kind, namespace and name)
// from the API server through Reader, not a cache: the object Apply found
// existing. It returns nil when there is none.
func (a *Applier) Get(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.reader().Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s get failed: %w", subject(desired), err)
	}
	return live, nil
}

func (a *Applier) reader() client.Reader {
	if a.Reader != nil {
		return a.Reader
	}
	return a.Client
}

// RemoveAnnotations removes the annotations keys from live, an object cueop
// controls, with a merge patch guarded by its uid (the patch fails on
// another object that took its name). Nothing is sent when live has none of
// them.
func (a *Applier) RemoveAnnotations(ctx context.Context, live *unstructured.Unstructured, keys ...string) error {
	ann := map[string]any{}
	for _, k := range keys {
		if _, ok := live.GetAnnotations()[k]; ok {
			ann[k] = nil
		}
	}
	if len(ann) == 0 {
		return nil
	}
	body := map[string]any{"metadata": map[string]any{"uid": string(live.GetUID()), "annotations": ann}}
	if err := a.patch(ctx, live.DeepCopy(), types.MergePatchType, body, a.fieldManager()+"-release"); err != nil {
		return fmt.Errorf("%s remove annotations %v failed: %w", subject(live), keys, err)
	}
	return nil
}
