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
// (servedRefused): there is no revision before it to keep.

// admissionError is a revision refused by its admission.
type admissionError struct{ error }

func (e admissionError) Unwrap() error { return e.error }

// admitOnce is the admission's verdict on k (admit), judged once per
// revision of r's kind: an answer the API server did not give (a
// reviewError) is not a verdict and is asked again. The caller holds
// lc.mu.
func (lc *kindLifecycle) admitOnce(ctx context.Context, k *template.Kind, r *kindRecord) error {
	if r.verdictRevision == k.Revision {
		return r.verdict
	}
	err := lc.admit(ctx, k)
	if errors.As(err, new(reviewError)) {
		r.verdictRevision, r.verdict = "", nil
		return err
	}
	r.verdictRevision, r.verdict = k.Revision, err
	return err
}

// admit runs the admission of k with the operator's policy, its renders
// in the workers.
func (lc *kindLifecycle) admit(ctx context.Context, k *template.Kind) error {
	lc.log.V(1).Info("admission", "kind", k.Resource.Kind, "revision", k.Revision)
	v := admission.Admit(ctx, admission.Input{Kind: k, Options: lc.run.renderOptions(), Eval: lc.run.eval})
	for _, w := range v.Warnings {
		lc.log.Info("template warning: "+w.String(), "kind", k.Resource.Kind, "revision", k.Revision)
	}
	if err := v.Err(); err != nil {
		return fmt.Errorf("kind %s: revision %s refused by its admission (what `cueop vet` refuses): %w", k.Name, k.Revision, err)
	}
	need, warnings, err := identity.DeriveAllowed(k, lc.run.renderOptions()) // the rights it needs
	for _, w := range warnings {
		lc.log.Info("template warning: "+w, "kind", k.Resource.Kind, "revision", k.Revision)
	}
	if err == nil {
		err = lc.run.ids.lacking(ctx, k, need) // rights.go
	}
	if err != nil {
		return fmt.Errorf("kind %s: revision %s refused by its admission: %w", k.Name, k.Revision, err)
	}
	return nil
}

// admissionRefused reports a revision its admission refused as a refused
// template; the last good revision keeps serving. The caller holds lc.mu.
func (lc *kindLifecycle) admissionRefused(ctx context.Context, k *template.Kind, err error) error {
	serving := "no revision of the kind serves yet"
	if kc, ok := lc.records.controller(k.Name); ok {
		serving = "revision " + kc.rec.Kind().Revision + " keeps serving"
	}
	msg := fmt.Sprintf("%v; %s", err, serving)
	lc.log.Error(nil, msg, "kind", k.Resource.Kind)
	lc.metrics.loadError()
	lc.refuse(k)
	lc.crds.event(ctx, k.Resource.CRDName(), wellknown.CRDReasonTemplateError, msg)
	return refusedError{admissionError{err}} // unserved.go: not retried
}

// servedRefused reports a revision its admission refused that serves all
// the same: the first revision of its kind this process serves (at start,
// or a new kind). Not serving it would leave the kind's CRs unreconciled,
// their deletions held by cueop's finalizers, with no revision before to
// fall back on; served, they stall with the same error, each saying so,
// and deletions go through. It is reported as a refused revision (the
// Template Degraded AdmissionRefused, a TemplateError Event, an ERROR
// line), is not recorded as accepted (a module source keeps its last
// accepted version), and the next edit that passes replaces it. The
// caller holds lc.mu.
func (lc *kindLifecycle) servedRefused(ctx context.Context, k *template.Kind, err error) error {
	msg := fmt.Sprintf("%v; served all the same, as no revision of the kind served before in this operator: its CRs stall on what admission refused until the template is fixed", err)
	lc.log.Error(nil, msg, "kind", k.Resource.Kind)
	lc.metrics.loadError()
	lc.crds.event(ctx, k.Resource.CRDName(), wellknown.CRDReasonTemplateError, msg)
	return refusedError{admissionError{err}}
}

// renderOptions are the render options of the operator's policy, as the
// kinds' reconcilers render with.
func (kr *kindRunner) renderOptions() render.Options {
	return render.Options{AllowedKinds: kr.opts.AllowedKinds, ReadableKinds: kr.opts.ReadableKinds, DataKinds: kr.opts.DataKinds,
		Scope: kr.scope, Budget: kr.opts.Budget}
}
