package reconcile

import (
	ctrl "sigs.k8s.io/controller-runtime"
)

// quietly is what Reconcile returns for err: a transient refusal of the
// render (the CR's tenant holds its share of the render workers: busy.go)
// is a state, not an error. The CR is retried with the controller's
// backoff as for an error, but nothing is logged as an error: a person has
// nothing to do about it, and a CR that waits for long says so in its
// status (pending.go). Any other error is returned as it is.
func quietly(res ctrl.Result, err error) (ctrl.Result, error) {
	if err != nil && isTransient(err) {
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // Requeue is the rate-limited retry an error would get
	}
	return res, err
}
