package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cueop/cueop/engine/admission"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Every revision a reload takes, whatever its source (a directory edit, a
// ConfigMap, a registry tag or digest, the first load after a restart),
// passes the admission `cueop vet` runs (package admission) before it
// serves: CRs built from its schema are rendered in the workers and their
// children checked against the Kubernetes schemas, its references against
// the readable kinds. A refused revision is reported as a refused template
// (an ERROR line naming each check, cueop_template_load_errors_total, a
// TemplateError Event on the CRD, the Template Degraded with reason
// AdmissionRefused and the same words); the revision before keeps serving.
// Only an edit changes the verdict: it is not retried. The first revision
// of a kind this process serves is served even when refused
// (admissionRefused): there is no revision before it to keep.

// admissionError is a revision refused by its admission.
type admissionError struct{ error }

func (e admissionError) Unwrap() error { return e.error }

// judge is the admission's verdict on k (admit), judged once per
// revision of r's kind: an answer the API server did not give (a
// reviewError) is not a verdict and is asked again. The caller holds
// kindLifecycle.mu.
func (r *kindRecord) judge(ctx context.Context, k *template.Kind, admit func(context.Context, *template.Kind) error) error {
	if r.verdictRevision == k.Revision {
		return r.verdict
	}
	err := admit(ctx, k)
	if errors.As(err, new(reviewError)) {
		r.verdictRevision, r.verdict = "", nil
		return err
	}
	r.verdictRevision, r.verdict = k.Revision, err
	return err
}

// admit runs the admission of k with the operator's policy, its renders
// in the workers, then checks its rights (rights.go).
func (kr *kindRunner) admit(ctx context.Context, k *template.Kind) error {
	kr.log.V(1).Info("admission", "kind", k.Resource.Kind, "revision", k.Revision)
	v := admission.Admit(ctx, admission.Input{Kind: k, Options: kr.renderOptions(), Eval: kr.eval})
	for _, w := range v.Warnings {
		// Verbose: the load's own warnings (templatewarn.go) say the same once.
		kr.log.V(1).Info("admission warning: "+w.String(), "kind", k.Resource.Kind, "revision", k.Revision)
	}
	if err := v.Err(); err != nil {
		return fmt.Errorf("kind %s: revision %s refused by its admission (what `cueop vet` refuses): %w", k.Name, k.Revision, err)
	}
	need, warnings, err := identity.DeriveAllowed(k, kr.renderOptions()) // the rights it needs
	for _, w := range warnings {
		kr.log.Info("rights warning: "+w, "kind", k.Resource.Kind, "revision", k.Revision)
	}
	if err == nil {
		err = kr.ids.lacking(ctx, k, need) // rights.go
	}
	if err != nil {
		return fmt.Errorf("kind %s: revision %s refused by its admission: %w", k.Name, k.Revision, err)
	}
	return nil
}

// admissionRefused reports a revision its admission refused as a refused
// template: an ERROR line, cueop_template_load_errors_total, a
// TemplateError Event on the CRD. With served false the revision before
// keeps serving, and the kind shows refused until a revision is admitted.
// With served true the revision serves all the same: it is the first of
// its kind this process serves (at start, or a new kind), and not serving
// it would leave the kind's CRs unreconciled, their deletions held by
// cueop's finalizers, with no revision before to fall back on; served,
// they stall with the same error, each saying so, and deletions go
// through. Either way it is not recorded as accepted (a module source
// keeps its last accepted version) and the next edit that passes
// replaces it. The caller holds lc.mu.
func (lc *kindLifecycle) admissionRefused(ctx context.Context, k *template.Kind, err error, served bool) error {
	var msg string
	switch kc, ok := lc.records.controller(k.Name); {
	case served:
		msg = fmt.Sprintf("%v; served all the same, as no revision of the kind served before in this operator: its CRs stall on what admission refused until the template is fixed", err)
	case ok:
		msg = fmt.Sprintf("%v; revision %s keeps serving", err, kc.rec.Kind().Revision)
	default:
		msg = fmt.Sprintf("%v; no revision of the kind serves yet", err)
	}
	lc.log.Error(nil, msg, "kind", k.Resource.Kind)
	lc.metrics.loadError()
	if !served {
		lc.refuse(k)
	}
	lc.crds.event(ctx, k.Resource.CRDName(), wellknown.CRDReasonTemplateError, msg)
	return refusedError{admissionError{err}} // unserved.go: not retried
}

// renderOptions are the render options of the operator's policy, as the
// kinds' reconcilers render with.
func (kr *kindRunner) renderOptions() render.Options {
	return render.Options{AllowedKinds: kr.opts.AllowedKinds, ReadableKinds: kr.opts.ReadableKinds, DataKinds: kr.opts.DataKinds,
		Scope: kr.scope, Budget: kr.opts.Budget}
}
