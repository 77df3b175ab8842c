package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// installCRD applies k's CRD with server-side apply and waits until it is
// established, so that the kind's informer can start. A breaking change to
// the schema of a kind with stored CRs is refused first (guardSchema): the
// CRD is left as it is.
func (o *Operator) installCRD(ctx context.Context, k *template.Kind) error {
	return o.installCRDThen(ctx, k, nil)
}

// installCRDThen is installCRD with beforeApply, when set, run once the
// schema guard passed the CRD, just before it is applied (kinds.go: a new
// version's converter is set then); the undo it returns runs when the API
// server refuses the apply (the CRD is as it was), not after (the CRD may
// serve the new version already).
func (o *Operator) installCRDThen(ctx context.Context, k *template.Kind, beforeApply func() (undo func())) error {
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
	ann[wellknown.AnnotationPackage] = k.Name              // claims.go: who holds the kind
	ann[wellknown.AnnotationOperator] = o.Instance()       // holder.go: the operator holding it
	ann[wellknown.AnnotationTemplates] = o.TemplatesMark() // and which of its operators writes its Template
	u.SetAnnotations(ann)
	if err := o.opts.Conversion.endpoint().Point(ctx, u); err != nil { // conversion.go
		return err
	}
	live, err := schemaguard.Live(ctx, o.mgr.GetAPIReader(), crd.Name)
	if err != nil {
		return err
	}
	if live != nil && live.GetAnnotations()[wellknown.AnnotationOperator] != "" && live.GetAnnotations()[wellknown.AnnotationOperator] != o.Instance() && !o.takesOver(k) {
		h := live.GetAnnotations()[wellknown.AnnotationOperator]
		// Taken by another operator since checkHolder read it.
		return heldError{crd: crd.Name, kind: k.Resource.ID(), holder: h, instance: o.Instance()}
	}
	if err := o.guardSchema(ctx, k, crd, live); err != nil { // schemaguard.go
		return err
	}
	undo := func() {}
	if beforeApply != nil {
		undo = beforeApply()
	}
	apply := o.applier.Apply
	if live != nil && live.GetAnnotations()[wellknown.AnnotationOperator] != o.Instance() {
		// Claimed (unclaimed or taken over) by this apply: over the CRD as
		// read, so that another instance's claim made since (two installs
		// starting together) refuses it (a Conflict, retried: checkHolder
		// then finds the claim) instead of being overwritten.
		apply = o.applier.ApplyOver
	}
	if _, err := apply(ctx, u, live); err != nil {
		if errors.As(err, new(apierrors.APIStatus)) { // the API server's answer: not applied
			undo()
		}
		return err
	}
	return o.waitEstablished(ctx, crd.Name)
}

func (o *Operator) waitEstablished(ctx context.Context, name string) error {
	reader := o.mgr.GetAPIReader()
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

// loadFailed reports a template load error where users look: a log line, a
// metric and, for each broken kind still served by its last good revision,
// a Warning Event on the kind's CRD (kubectl describe crd shows it).
func (o *Operator) loadFailed(ctx context.Context, err error, broken map[string]error) {
	o.log.Error(err, "templates did not load; the last good revision of each kind keeps serving")
	o.metrics.loadError()
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, kerr := range broken {
		kc, ok := o.kinds[name]
		if !ok {
			continue
		}
		o.crdEvent(ctx, kc.crdName, wellknown.CRDReasonTemplateError,
			fmt.Sprintf("template of %s refused, revision %s keeps serving: %v", name, kc.rec.Kind().Revision, kerr))
	}
}

// crdEvent emits a Warning Event on a CRD, where `kubectl describe crd`
// shows it.
func (o *Operator) crdEvent(ctx context.Context, crdName, reason, msg string) {
	o.crdEventType(ctx, crdName, corev1.EventTypeWarning, reason, msg)
}

// crdEventType emits an Event of type typ on a CRD.
func (o *Operator) crdEventType(ctx context.Context, crdName, typ, reason, msg string) {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := o.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: crdName}, ref); err != nil {
		o.log.Error(err, "cannot report on the CRD", "crd", crdName, "reason", reason)
		return
	}
	o.recorder.Event(ref, typ, reason, msg)
}
