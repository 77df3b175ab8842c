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
func (o *Operator) guardSchema(ctx context.Context, k *template.Kind, next *apiextensionsv1.CustomResourceDefinition, live *unstructured.Unstructured) error {
	o.migrations.moveFieldsBeforeDrop(ctx, next, live) // managedfields.go
	r, err := schemaguard.Check(ctx, o.mgr.GetAPIReader(), k, live, next)
	switch {
	case err != nil:
		return err
	case r == nil:
		return nil
	case r.Stored > 0:
		return r
	}
	msg := "breaking schema change taken, as no CR of the kind is stored:" + r.Details()
	o.log.Info(msg, "kind", k.Resource.Kind, "revision", k.Revision)
	o.recorder.Event(live, corev1.EventTypeWarning, wellknown.CRDReasonBreakingSchemaChange, msg)
	return nil
}

// schemaRefused reports a refused schema change where template errors
// show: an ERROR log line, cueop_template_load_errors_total, and a
// TemplateError Event on the kind's CRD; the kind's refusal gauge is set
// until a revision of the kind is served again (schemaAccepted). Other
// errors are returned as they are. The caller holds o.mu.
func (o *Operator) schemaRefused(ctx context.Context, k *template.Kind, crdName string, err error) error {
	var r *schemacompat.Refusal
	if !errors.As(err, &r) {
		return err
	}
	serving := "no revision of the kind serves yet"
	if kc, ok := o.kinds[k.Name]; ok {
		serving = "revision " + kc.rec.Kind().Revision + " keeps serving"
	}
	msg := fmt.Sprintf("template of %s (revision %s) refused: the CRD is left as it is and %s: %v", k.Name, k.Revision, serving, r)
	o.log.Error(nil, msg, "kind", k.Resource.Kind)
	o.metrics.loadError()
	o.metrics.schemaRefused(k, true)
	o.refused[k.Name] = true
	o.crdEvent(ctx, crdName, wellknown.CRDReasonTemplateError, msg)
	return fmt.Errorf("kind %s: %w", k.Name, err)
}

// schemaAccepted clears the refusal of k's kind, once a revision of it
// (a new one, or the one that kept serving) is served. The caller holds
// o.mu.
func (o *Operator) schemaAccepted(k *template.Kind) {
	if !o.refused[k.Name] {
		return
	}
	delete(o.refused, k.Name)
	o.metrics.schemaRefused(k, false)
	o.log.Info("schema change no longer refused: the kind serves revision "+k.Revision, "kind", k.Resource.Kind, "resolved", "template refused")
}

// anyRefused reports whether a kind's schema change is refused now.
func (o *Operator) anyRefused() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.refused) > 0
}
