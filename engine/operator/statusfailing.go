package operator

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/wellknown"
)

// statusFailing is the reconcilers' Host.StatusFailing of the kind whose CRD
// is crdName: it sets the CRD's wellknown.CRDConditionStatusWriteFailing and logs.
func (c *crdWriter) statusFailing(crdName string) func(context.Context, reconcile.StatusFailing) {
	return func(ctx context.Context, st reconcile.StatusFailing) {
		cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: wellknown.CRDConditionStatusWriteFailing, Status: apiextensionsv1.ConditionFalse,
			Reason: wellknown.CRDReasonStatusWritten, Message: "the status of every CR is written"}
		if st.Failing > 0 {
			cond.Status, cond.Reason = apiextensionsv1.ConditionTrue, wellknown.ReasonStatusWriteFailed
			// No count: the condition is set only when the kind's state
			// moves (its first CR failing), not at each CR that follows.
			cond.Message = fmt.Sprintf("the status of CRs could not be written, retried with backoff (a %s Event on each), first %s: %s",
				wellknown.ReasonStatusWriteFailed, st.First, st.Err)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.reader.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
				return err
			}
			if old := apihelpers.FindCRDCondition(crd, cond.Type); old == nil && st.Failing == 0 ||
				old != nil && old.Status == cond.Status && old.Message == cond.Message {
				return nil // as it is: a kind that never failed has no such condition
			}
			if st.Failing > 0 {
				c.log.Error(nil, "status writes failing: "+cond.Message, "crd", crdName)
			} else {
				c.log.Info("status writes no longer failing", "crd", crdName)
			}
			apihelpers.SetCRDCondition(crd, cond)
			return c.client.Status().Update(ctx, crd, client.FieldOwner(apply.DefaultFieldManager))
		})
		if err != nil {
			c.log.Error(err, "CustomResourceDefinition "+crdName+": condition "+string(wellknown.CRDConditionStatusWriteFailing)+" not set")
		}
	}
}
