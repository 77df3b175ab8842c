package operator

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteConversionReport is the write of a conversion refusal of obj (as
// the API server showed it) with message msg ("" removes the condition),
// for the external tests.
func WriteConversionReport(ctx context.Context, c client.Client, rec record.EventRecorder, obj *unstructured.Unstructured, msg string) error {
	r := &conversionReports{client: c, recorder: rec, log: logr.Discard()}
	return r.apply(ctx, obj, msg)
}
