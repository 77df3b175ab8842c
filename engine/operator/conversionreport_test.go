package operator_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	krecord "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestConversionReportWritesOnlyTheReviewedCR: the Convertible condition
// of a refusal is written only to the CR the review held, at the version
// the review saw: a report of a Memo deleted and created again under its
// name meanwhile, or of a Memo changed since, writes nothing (the next
// conversion of the CR reports it again).
func TestConversionReportWritesOnlyTheReviewedCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"memo": wideTemplate})
	clustertest.DeleteCRDsAtEnd(t, wideCRD)
	operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, 60*time.Second, wideCRD)

	c, err := client.New(clustertest.Config(), client.Options{})
	must(t, err)
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	must(t, err)
	b := krecord.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "test"})

	memo := "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: m, namespace: " + ns + "}\nspec: {size: 1}\n"
	mustKubectl(t, memo, "create", "-f", "-")
	old := mustGetAt(t, "memos.v1.annot.example.com", ns, "m")
	mustKubectl(t, "", "delete", "memos.v1.annot.example.com", "-n", ns, "m", "--wait")
	mustKubectl(t, memo, "create", "-f", "-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := operator.WriteConversionReport(ctx, c, rec, old, "refused"); err == nil {
		t.Errorf("report of the Memo deleted since: written, want refused")
	}
	cur := mustGetAt(t, "memos.v1.annot.example.com", ns, "m")
	if cond := conditionOf(cur, wellknown.ConditionConvertible); cond != nil {
		t.Errorf("Memo created again under the name of one reported: condition %v, want none", cond)
	}

	mustKubectl(t, "", "patch", "memos.v1.annot.example.com", "-n", ns, "m", "--type=merge", "-p", `{"spec":{"size":2}}`)
	if err := operator.WriteConversionReport(ctx, c, rec, cur, "refused"); err == nil {
		t.Errorf("report of the Memo changed since: written, want refused")
	}
	// The operator writes the Memo's status meanwhile: a report of the
	// Memo as read is retried on a conflict, as the next conversion would.
	eventually(t, 30*time.Second, func() string {
		err := operator.WriteConversionReport(ctx, c, rec, mustGetAt(t, "memos.v1.annot.example.com", ns, "m"), "refused")
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("report of the Memo as it is: %v", err)
		}
		if err != nil {
			return err.Error()
		}
		return ""
	})
	if cond := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", ns, "m"), wellknown.ConditionConvertible); cond == nil || cond["message"] != "refused" {
		t.Errorf("Memo reported as it is: condition %v, want the refusal", cond)
	}
}
