package reconcile

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestApplyFailedStallsOnRefusals: the API server's final refusals of a
// child stall the CR (and so count against its rollout), among them the
// InternalError it answers an apply with an undeclared field with; a
// passing failure is retried.
func TestApplyFailedStallsOnRefusals(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, c := range []struct {
		what    string
		err     error
		stalled bool
	}{
		{"undeclared field", apierrors.NewInternalError(errors.New("failed to create typed patch object (ns/p; /v1, Kind=Pod): .spec.containerz: field not declared in schema")), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "s", nil), true},
		{"bad request", apierrors.NewBadRequest("bad"), true},
		{"forbidden", apierrors.NewForbidden(pods, "p", errors.New("no")), true},
		{"other internal error", apierrors.NewInternalError(errors.New("etcd timeout")), false},
		{"conflict", apierrors.NewConflict(pods, "p", errors.New("changed")), false},
	} {
		if got := applyFailed(c.err).stall != nil; got != c.stalled {
			t.Errorf("%s: stalled %v, want %v", c.what, got, c.stalled)
		}
	}
}
