package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestStatusWriteFailureShown: an admission policy refuses every status
// write of one Shelf: the failure shows as a StatusWriteFailed Event on
// the Shelf, in cueop_status_write_failures_total{kind} and as the
// StatusWriteFailing condition of the kind's CRD naming it; once the
// policy goes, the retry writes the status and the condition turns False.
func TestStatusWriteFailureShown(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, _ := shelvesSwitched(t, c, ns, 1, false)
	policy := freezeShelf(t, ns, "s00")
	before := metricSum(t, "cueop_status_write_failures_total", "kind", "Shelf")

	operatortest.Start(t, clustertest.Config(), migrateOptions(dir, ns))
	eventually(t, 60*time.Second, func() string {
		cond := crdCondition(t, c, shelfCRD, wellknown.CRDConditionStatusWriteFailing)
		if cond == nil || cond.Status != apiextensionsv1.ConditionTrue || !strings.Contains(cond.Message, ns+"/s00: ") ||
			!strings.Contains(cond.Message, "s00 is frozen") || strings.Contains(cond.Message, "1 CRs") {
			return fmt.Sprintf("CRD condition %s = %+v, want True naming %s/s00 and the policy's reason, and no count of CRs it is not kept at", wellknown.CRDConditionStatusWriteFailing, cond, ns)
		}
		return ""
	})
	eventually(t, 30*time.Second, func() string {
		list := &corev1.EventList{}
		must(t, c.List(context.Background(), list, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "s00"}))
		for _, e := range list.Items {
			if e.Reason == wellknown.ReasonStatusWriteFailed && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "s00 is frozen") {
				return ""
			}
		}
		return "no StatusWriteFailed Event on the Shelf"
	})
	if got := metricSum(t, "cueop_status_write_failures_total", "kind", "Shelf"); got <= before {
		t.Errorf("cueop_status_write_failures_total{kind=Shelf} = %v, want more than %v", got, before)
	}

	mustKubectl(t, "", "delete", "validatingadmissionpolicybinding", policy)
	mustKubectl(t, "", "-n", ns, "wait", "shelves.v2.migrate.example.com/s00", "--timeout=60s", "--for=jsonpath={.status.books}=0")
	eventually(t, 30*time.Second, func() string {
		if cond := crdCondition(t, c, shelfCRD, wellknown.CRDConditionStatusWriteFailing); cond == nil || cond.Status != apiextensionsv1.ConditionFalse {
			return fmt.Sprintf("CRD condition %s = %+v once the status is written, want False", wellknown.CRDConditionStatusWriteFailing, cond)
		}
		return ""
	})
}

// crdCondition is the condition typ of the CRD name, nil when it has none.
func crdCondition(t *testing.T, c client.Client, name string, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	t.Helper()
	crd := getCRDNamed(t, c, name)
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}
