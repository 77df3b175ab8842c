package diff

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyMode is how the user applies the file that diff -f previews.
type ApplyMode string

const (
	// ApplyAuto previews a client-side apply for a live CR that carries
	// kubectl's last-applied-configuration annotation (it was applied
	// client-side), a server-side apply otherwise.
	ApplyAuto ApplyMode = ""
	// ApplyClientSide previews `kubectl apply`: a JSON merge patch computed
	// three-way from the last-applied configuration, the file and the live
	// CR, as kubectl does for a custom resource.
	ApplyClientSide ApplyMode = "client-side"
	// ApplyServerSide previews `kubectl apply --server-side` (field manager
	// kubectl).
	ApplyServerSide ApplyMode = "server-side"
)

// ClientSideFieldManager is the field manager of kubectl's client-side
// apply.
const ClientSideFieldManager = "kubectl-client-side-apply"

// FileApply says how diff previewed applying one CR of a file.
type FileApply struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Mode      ApplyMode `json:"mode"`
	// Why is the line the text output prints.
	Why string `json:"why"`
}

// modeFor is the apply mode previewed for a file CR whose live object is
// live (nil when absent), whether it is previewed as kubectl's three-way
// merge patch, and why.
func modeFor(asked ApplyMode, live *unstructured.Unstructured) (mode ApplyMode, merge bool, why string) {
	lastApplied := live != nil && live.GetAnnotations()[corev1.LastAppliedConfigAnnotation] != ""
	switch {
	case asked == ApplyServerSide && lastApplied:
		// kubectl apply --server-side over a CR applied client-side moves the
		// fields of its client-side apply to its own manager and applies
		// again (csaupgrade): what the file drops is removed, as by the
		// three-way merge.
		return ApplyServerSide, true, "as kubectl apply --server-side, which takes over the fields of the live CR's client-side apply: what the file drops from its last-applied-configuration is removed"
	case asked == ApplyServerSide:
		return ApplyServerSide, false, "as kubectl apply --server-side (field manager kubectl)"
	case asked == ApplyClientSide && lastApplied:
		return ApplyClientSide, true, "as kubectl apply: a merge patch, three-way from its last-applied-configuration, the file and the live CR"
	case asked == ApplyClientSide:
		return ApplyClientSide, true, "as kubectl apply: a merge patch from the file over the live CR, which has no last-applied-configuration (nothing is removed)"
	case lastApplied:
		return ApplyClientSide, true, "as kubectl apply (the live CR has a last-applied-configuration): a merge patch, three-way from it, the file and the live CR; --server-side previews kubectl apply --server-side"
	case live != nil:
		return ApplyServerSide, false, "as kubectl apply --server-side (the live CR has no last-applied-configuration); --server-side=false previews a client-side kubectl apply"
	}
	return ApplyServerSide, false, "as kubectl apply --server-side (a new CR); --server-side=false previews a client-side kubectl apply"
}

// clientSideApply dry-runs what `kubectl apply` (client-side) makes of cr:
// a create carrying the last-applied annotation when live is nil, else
// kubectl's three-way JSON merge patch of the last-applied configuration,
// cr and live.
func (d *differ) clientSideApply(ctx context.Context, cr, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	modified, err := withLastApplied(cr)
	if err != nil {
		return nil, err
	}
	if live == nil {
		got := modified.DeepCopy()
		err := d.o.Client.Create(ctx, got, client.DryRunAll, client.FieldOwner(ClientSideFieldManager))
		return got, err
	}
	patch, err := threeWayPatch(live, modified)
	if err != nil {
		return nil, err
	}
	got := live.DeepCopy()
	err = d.o.Client.Patch(ctx, got, client.RawPatch(types.MergePatchType, patch), client.DryRunAll, client.FieldOwner(ClientSideFieldManager))
	return got, err
}

// withLastApplied is cr with kubectl's last-applied-configuration
// annotation: cr itself, without that annotation, as JSON.
func withLastApplied(cr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := cr.DeepCopy()
	ann := out.GetAnnotations()
	delete(ann, corev1.LastAppliedConfigAnnotation)
	out.SetAnnotations(ann)
	raw, err := json.Marshal(out.Object)
	if err != nil {
		return nil, err
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[corev1.LastAppliedConfigAnnotation] = string(raw) + "\n"
	out.SetAnnotations(ann)
	return out, nil
}

// threeWayPatch is kubectl's patch for a custom resource (its Patcher's
// buildMergePatch): a JSON merge patch from the last-applied configuration
// of live (original), modified and live (current).
func threeWayPatch(live, modified *unstructured.Unstructured) ([]byte, error) {
	original := []byte(live.GetAnnotations()[corev1.LastAppliedConfigAnnotation])
	if len(original) == 0 {
		original = nil
	}
	mod, err := json.Marshal(modified.Object)
	if err != nil {
		return nil, err
	}
	current, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, mod, current,
		mergepatch.RequireKeyUnchanged("apiVersion"), mergepatch.RequireKeyUnchanged("kind"), mergepatch.RequireMetadataKeyUnchanged("name"))
	if mergepatch.IsPreconditionFailed(err) {
		return nil, fmt.Errorf("at least one of apiVersion, kind and name was changed")
	}
	return patch, err
}
