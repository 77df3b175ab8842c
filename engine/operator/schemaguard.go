package operator

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// guardSchema checks next, the CRD of k, against live, the one the
// cluster serves (nil when there is none), before next is applied
// (schemaguard.Check; the managedFields at a version next stops serving
// moved first, moveFieldsBeforeDrop): a breaking change to a kind with stored CRs is
// refused with the *schemacompat.Refusal; a kind with no stored CR takes
// it, with a warning Event on the CRD.
func (c *crdWriter) guardSchema(ctx context.Context, k *template.Kind, next *apiextensionsv1.CustomResourceDefinition, live *unstructured.Unstructured) error {
	if c.moveFields != nil {
		c.moveFields(ctx, next, live) // managedfields.go
	}
	r, err := schemaguard.Check(ctx, c.reader, k, live, next)
	switch {
	case err != nil:
		return err
	case r == nil:
		return nil
	case r.Stored > 0:
		return r
	}
	msg := "breaking schema change taken, as no CR of the kind is stored:" + r.Details()
	c.log.Info(msg, "kind", k.Resource.Kind, "revision", k.Revision)
	c.recorder.Event(live, corev1.EventTypeWarning, wellknown.CRDReasonBreakingSchemaChange, msg)
	return nil
}

// schemaRefused reports a refused schema change where template errors
// show: an ERROR log line, cueop_template_load_errors_total, and a
// TemplateError Event on the kind's CRD; the kind's refusal gauge is set
// until a revision of the kind is admitted (enter). Other
// errors are returned as they are. The caller holds lc.mu.
func (lc *kindLifecycle) schemaRefused(ctx context.Context, k *template.Kind, crdName string, err error) error {
	var r *schemacompat.Refusal
	if !errors.As(err, &r) {
		return err
	}
	serving := "no revision of the kind serves yet"
	if kc, ok := lc.records.controller(k.Name); ok {
		serving = "revision " + kc.rec.Kind().Revision + " keeps serving"
	}
	msg := fmt.Sprintf("template of %s (revision %s) refused: the CRD is left as it is and %s: %v", k.Name, k.Revision, serving, r)
	lc.log.Error(nil, msg, "kind", k.Resource.Kind)
	lc.metrics.loadError()
	lc.refuse(k)
	lc.crds.event(ctx, crdName, wellknown.CRDReasonTemplateError, msg)
	return fmt.Errorf("kind %s: %w", k.Name, err)
}

// refuse records k's newest revision refused (by its schema change or
// its conversion): cueop_template_refused shows it until a revision of the
// kind is admitted (enter). The caller holds lc.mu.
func (lc *kindLifecycle) refuse(k *template.Kind) {
	r := lc.records.of(k.Name)
	lc.enter(r, k, phaseRefused)
	r.refusalShown = true
	lc.metrics.schemaRefused(k, true)
}
