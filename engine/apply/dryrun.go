package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DryRun sends the apply Apply would send for desired (stamped, forcing
// ownership, as the applier's field manager) with dryRun=All: the API
// server runs defaulting, admission and validation and answers with the
// object as it would be, and stores nothing. name, when not empty, applies
// the object under that name instead (an object that does not exist, to see
// what creating desired anew would give); the answer is renamed back.
func (a *Applier) DryRun(ctx context.Context, desired *unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
	return a.dryRun(ctx, desired, name, false)
}

// DryRunCreate is DryRun of the create-only apply Apply sends for a child
// it is told is absent: when an object of that name exists, the error
// wraps ErrExists.
func (a *Applier) DryRunCreate(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.dryRun(ctx, desired, "", true)
}

func (a *Applier) dryRun(ctx context.Context, desired *unstructured.Unstructured, name string, create bool) (*unstructured.Unstructured, error) {
	obj, _, err := stamp(desired)
	if err != nil {
		return nil, fmt.Errorf("%s dry-run apply failed: %w", subject(desired), err)
	}
	if name != "" {
		meta := obj.Object["metadata"].(map[string]any)
		meta["name"] = name
	}
	if create {
		guardCreate(obj)
	}
	out := &unstructured.Unstructured{Object: obj.Object}
	err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out),
		client.FieldOwner(a.fieldManager()), client.ForceOwnership, client.DryRunAll)
	if err != nil && create && createRefused(desired, err) != nil {
		return nil, createRefused(desired, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s dry-run apply failed: %w", subject(desired), err)
	}
	if name != "" {
		out.SetName(desired.GetName())
	}
	return out, nil
}
