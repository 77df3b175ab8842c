package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/render"
)

// BindingModeWaitForFirstConsumer is the volumeBindingMode of a
// StorageClass whose claims stay Pending until a Pod uses them.
const BindingModeWaitForFirstConsumer = "WaitForFirstConsumer"

// BindingModes returns the volumeBindingMode of the StorageClass named
// class ("Immediate", "WaitForFirstConsumer"), for the gates.
type BindingModes func(ctx context.Context, class string) (string, error)

// gateReady says whether child c, whose live object is live (nil when it
// does not exist), lets the gates pass (the waves and the recreate gate),
// and if not what it waits for: "to exist", "to be ready (readyWhen)", "to
// be ready". The template's readyWhen decides where given, else kstatus,
// except for two states that only a later wave can end, which count as
// ready for the gates (not for the CR's Ready condition): a
// PersistentVolumeClaim Pending under a WaitForFirstConsumer StorageClass
// (its consumer is what binds it) and a LoadBalancer Service without an
// address (its clients need not wait for one). modes may be nil: then
// every Pending claim waits.
func gateReady(ctx context.Context, c render.Child, live *unstructured.Unstructured, modes BindingModes) (bool, string) {
	switch {
	case live == nil:
		return false, "to exist"
	case c.ReadyWhen != nil:
		return *c.ReadyWhen, "to be ready (readyWhen)"
	}
	if res, err := status.Compute(live); err == nil && res.Status == status.CurrentStatus {
		return true, ""
	}
	switch live.GroupVersionKind().GroupKind().String() {
	case "Service":
		if t, _, _ := unstructured.NestedString(live.Object, "spec", "type"); t == "LoadBalancer" {
			return true, ""
		}
	case "PersistentVolumeClaim":
		return claimWaitsForConsumer(ctx, live, modes)
	}
	return false, "to be ready"
}

// claimWaitsForConsumer is true for a claim not bound yet whose
// StorageClass binds on first use: it is as ready as it gets before its
// consumer exists.
func claimWaitsForConsumer(ctx context.Context, pvc *unstructured.Unstructured, modes BindingModes) (bool, string) {
	phase, _, _ := unstructured.NestedString(pvc.Object, "status", "phase")
	class, _, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName")
	if modes == nil || class == "" || (phase != "" && phase != "Pending") {
		return false, "to be ready"
	}
	mode, err := modes(ctx, class)
	if err != nil {
		return false, "to be ready (its StorageClass " + class + " could not be read: " + err.Error() + ")"
	}
	return mode == BindingModeWaitForFirstConsumer, "to be ready"
}
