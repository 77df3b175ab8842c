package reconcile

import (
	"fmt"

	"github.com/cueop/cueop/engine/wellknown"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unfinished is the outcome of a reconcile that failed after its render: a
// failure nothing else explained (a finalizer, prune or recreate request)
// keeps the CR Reconciling, never Converged.
func (r *run) unfinished(err error) outcome {
	if err == nil || r.wait() != "" || r.stalled != nil || r.observeFailed != nil || r.res == nil {
		return outcome{}
	}
	return waitFor("retrying: " + firstLine(err.Error()))
}

// pendingConditions are the conditions of a CR this reconcile did not
// render at its current inputs (r.res is nil, nothing stalled it): it
// waits, and says why. A Ready condition it already has stays as it is: its
// children, unchanged, serve as they did (a template edit rolling out must
// not make Ready drop); a CR never rendered reads Ready=Unknown.
func (r *run) pendingConditions(set func(typ string, s metav1.ConditionStatus, reason, msg string), hasReady bool) {
	msg := r.pendingMessage()
	set(wellknown.ConditionReconciling, metav1.ConditionTrue, wellknown.ReasonRenderPending, msg)
	set(wellknown.ConditionStalled, metav1.ConditionFalse, wellknown.ReasonRenderPending, "")
	if !hasReady {
		set(wellknown.ConditionReady, metav1.ConditionUnknown, wellknown.ReasonRenderPending, msg)
	}
}

// pendingMessage says why a CR without a render of its current inputs
// waits.
func (r *run) pendingMessage() string {
	switch {
	case r.pending != "":
		return r.pending
	case r.wait() != "":
		return r.wait()
	}
	return fmt.Sprintf("not rendered at generation %d with template revision %s yet; retrying", r.cr.GetGeneration(), r.kind.Revision)
}
