package operator

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// crdWriter writes the kinds' CRDs and reports on them: it applies a
// kind's CRD past the schema guard, records and checks which operator
// instance holds it (holder.go), points its conversion webhook
// (cabundle.go), and puts Events and conditions on it (statusfailing.go).
// It keeps no state of its own: the CRDs are the record.
type crdWriter struct {
	reader   client.Reader
	client   client.Client
	applier  *apply.Applier
	recorder record.EventRecorder
	log      logr.Logger
	// instance is the operator instance this one is (Options.Instance or
	// DefaultInstance); mark its templates (TemplatesMark).
	instance, mark string
	takeOver       []string // Options.TakeOver
	conversion     *Conversion
	// moveFields moves the managedFields at a version a CRD stops serving
	// (migrations.moveFieldsBeforeDrop); nil moves none.
	moveFields func(ctx context.Context, next *apiextensionsv1.CustomResourceDefinition, live *unstructured.Unstructured)
}

// install applies k's CRD with server-side apply and waits until it is
// established, so that the kind's informer can start. A breaking change to
// the schema of a kind with stored CRs is refused first (guardSchema): the
// CRD is left as it is.
func (c *crdWriter) install(ctx context.Context, k *template.Kind) error {
	return c.installThen(ctx, k, nil)
}

// installThen is install with beforeApply, when set, run once the
// schema guard passed the CRD, just before it is applied (lifecycle.go: a new
// version's converter is set then); the undo it returns runs when the API
// server refuses the apply (the CRD is as it was), not after (the CRD may
// serve the new version already).
func (c *crdWriter) installThen(ctx context.Context, k *template.Kind, beforeApply func() (undo func())) error {
	crd, err := crdgen.Generate(k)
	if err != nil {
		return err // names the kind and the CRD
	}
	u, err := crdgen.ToUnstructured(crd)
	if err != nil {
		return err
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.AnnotationPackage] = k.Name      // loader.go: who holds the kind
	ann[wellknown.AnnotationOperator] = c.instance // holder.go: the operator holding it
	ann[wellknown.AnnotationTemplates] = c.mark    // and which of its operators writes its Template
	u.SetAnnotations(ann)
	if err := c.conversion.endpoint().Point(ctx, u); err != nil { // conversion.go
		return err
	}
	live, err := schemaguard.Live(ctx, c.reader, crd.Name)
	if err != nil {
		return err
	}
	if live != nil && live.GetAnnotations()[wellknown.AnnotationOperator] != "" && live.GetAnnotations()[wellknown.AnnotationOperator] != c.instance && !c.takesOver(k) {
		h := live.GetAnnotations()[wellknown.AnnotationOperator]
		// Taken by another operator since checkHolder read it.
		return heldError{crd: crd.Name, kind: k.Resource.ID(), holder: h, instance: c.instance}
	}
	if err := c.guardSchema(ctx, k, crd, live); err != nil { // schemaguard.go
		return err
	}
	undo := func() {}
	if beforeApply != nil {
		undo = beforeApply()
	}
	apply := c.applier.Apply
	if live != nil && live.GetAnnotations()[wellknown.AnnotationOperator] != c.instance {
		// Claimed (unclaimed or taken over) by this apply: over the CRD as
		// read, so that another instance's claim made since (two installs
		// starting together) refuses it (a Conflict, retried: checkHolder
		// then finds the claim) instead of being overwritten.
		apply = c.applier.ApplyOver
	}
	if _, err := apply(ctx, u, live); err != nil {
		if errors.As(err, new(apierrors.APIStatus)) { // the API server's answer: not applied
			undo()
		}
		return err
	}
	return c.waitEstablished(ctx, crd.Name)
}

func (c *crdWriter) waitEstablished(ctx context.Context, name string) error {
	reader := c.reader
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// event emits a Warning Event on a CRD, where `kubectl describe crd`
// shows it.
func (c *crdWriter) event(ctx context.Context, crdName, reason, msg string) {
	c.eventType(ctx, crdName, corev1.EventTypeWarning, reason, msg)
}

// eventType emits an Event of type typ on a CRD.
func (c *crdWriter) eventType(ctx context.Context, crdName, typ, reason, msg string) {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.reader.Get(ctx, client.ObjectKey{Name: crdName}, ref); err != nil {
		c.log.Error(err, "cannot report on the CRD", "crd", crdName, "reason", reason)
		return
	}
	c.recorder.Event(ref, typ, reason, msg)
}
