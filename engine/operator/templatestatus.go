package operator

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Each kind's state is a cluster object, a Template of cueop.dev/v1alpha1
// named by the kind's CRD name (plural.group), whose status the operator
// writes (templatewriter.go): where the serving revision came from, its
// revision, versions and storage version, the ServiceAccount the kind acts
// as, and why the newest revision does not serve, with its CUE
// file:line:col. Its conditions:
//
//   - Ready is True while a revision of the kind serves (a controller
//     reconciles its CRs), the last good one included: `kubectl wait
//     --for=condition=Ready` passes once the kind serves and a broken edit
//     does not make it fail.
//   - Degraded is True while the newest revision does not serve: its
//     template did not load, its schema change or its conversions were
//     refused, its serve failed, or it waits for its CRD.
//
// A kind removed from the templates keeps its object, Ready False with
// reason KindRemoved: its CRD, CRs and conversions stay, and the object
// says which revision served last. A kind whose template is broken before
// it ever served has no object until it does (its CRD name is not known),
// unless an object of an earlier run names its package.

// The Template kind and the CRD it is served by (templatecrd.yaml, copied
// to config/crd by `cueop manifests`).
var (
	TemplateGVK = schema.GroupVersionKind{Group: "cueop.dev", Version: "v1alpha1", Kind: "Template"}
	//go:embed templatecrd.yaml
	templateCRDYAML []byte
)

// TemplateCRDName is the name of the Template CRD.
const TemplateCRDName = "templates.cueop.dev"

// TemplateCRD is the Template CRD as YAML.
func TemplateCRD() []byte { return templateCRDYAML }

// templateState is a Template's status.
type templateState struct {
	Package        string             `json:"package,omitempty"`
	Kind           string             `json:"kind,omitempty"`
	Source         *templateSource    `json:"source,omitempty"`
	Revision       string             `json:"revision,omitempty"`
	Versions       []string           `json:"versions,omitempty"`
	StorageVersion string             `json:"storageVersion,omitempty"`
	ServiceAccount string             `json:"serviceAccount,omitempty"`
	LastError      string             `json:"lastError,omitempty"`
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
}

type templateSource struct {
	Ref     string `json:"ref,omitempty"`
	Module  string `json:"module,omitempty"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// kindReport is what one reload found of one kind's package.
type kindReport struct {
	pkg  string
	name string // the Template's name; "" when not known here
	// fields are the status fields but the conditions and lastError; nil
	// keeps those written last.
	fields          *templateState
	lastError       string
	ready, degraded metav1.Condition
	removed         bool // applies only to an object that names pkg
}

// kindReports makes each kind's report for its Template and queues it to
// the writer: the reports of a reload, of a kind served later, of a load
// that failed; and the module versions refused at fetch
// (modulerefused.go), which show on the kinds of their reference. Its
// state, and the kinds it is given, are the operator's, guarded by the
// operator's mu, which the caller holds.
type kindReports struct {
	// speaks: it reports on the kinds (their Templates, their CRDs'
	// Events, the template warnings): an operator unsharded or a sharded
	// replica's range 0, whose kinds it reports for the others.
	speaks     bool
	log        logr.Logger
	identities *identity.Config // nil: every kind acts as the operator
	// event emits a Warning Event on a CRD (crds.go).
	event func(ctx context.Context, crdName, reason, msg string)
	// writer writes the Templates; nil where the range does not speak.
	// It starts at the first report.
	writer      *templateWriter
	controllers *sync.WaitGroup // the writer runs counted in
	// refused are the module references whose newest version was refused
	// at fetch, by reference (modulerefused.go).
	refused map[string]moduleRefusal
}

// started is the writer, running with ctx from now on; nil where the
// range does not speak.
func (r *kindReports) started(ctx context.Context) *templateWriter {
	if r.writer != nil {
		r.writer.start(ctx, r.controllers)
	}
	return r.writer
}

// reload queues the state of every kind of set, failed holding the error
// each kind's serve returned. A package the writer knows of that set
// neither holds nor found broken was removed.
func (r *kindReports) reload(ctx context.Context, s kindRecords, set *template.Set, failed map[string]error) {
	w := r.started(ctx)
	if w == nil {
		return
	}
	seen := map[string]bool{}
	var reports []kindReport
	for _, k := range set.Kinds {
		seen[k.Name] = true
		reports = append(reports, r.kind(s, k, failed[k.Name]))
	}
	for name, err := range set.Broken {
		seen[name] = true
		reports = append(reports, r.broken(s, name, err))
	}
	w.queueAll(reports, seen)
}

// loadFailed queues every known kind as broken by err, a load that found
// no kind at all (the module itself did not load).
func (r *kindReports) loadFailed(ctx context.Context, s kindRecords, err error) {
	w := r.started(ctx)
	if w == nil {
		return
	}
	set := &template.Set{Broken: map[string]error{}}
	for _, pkg := range w.packages() {
		set.Broken[pkg] = err
	}
	for pkg := range s.controllers() {
		set.Broken[pkg] = err
	}
	r.reload(ctx, s, set, nil)
}

// served queues the state of k alone, once its serve ended with err
// outside a reload (crdwait.go).
func (r *kindReports) served(ctx context.Context, s kindRecords, k *template.Kind, err error) {
	if w := r.started(ctx); w != nil {
		w.queue(r.kind(s, k, err))
	}
}

// kind is the state of k, the newest revision of its package, whose serve
// returned err.
func (r *kindReports) kind(s kindRecords, k *template.Kind, err error) kindReport {
	rep := kindReport{pkg: k.Name, name: k.Resource.CRDName()}
	kc, serving := s.controller(k.Name)
	waiting := s.waiting(k.Name)
	switch {
	case err != nil:
		rep.lastError = err.Error()
		rep.degraded = condition(wellknown.TemplateConditionDegraded, true, refusalReason(err), err.Error())
	case waiting:
		msg := fmt.Sprintf("revision %s waits for its CRD %s, which cueop does not install (--install-crds=false)", k.Revision, rep.name)
		rep.degraded = condition(wellknown.TemplateConditionDegraded, true, wellknown.TemplateReasonWaitingForCRD, msg)
	case !serving || kc.rec.Kind().Revision != k.Revision:
		rep.degraded = condition(wellknown.TemplateConditionDegraded, true, wellknown.TemplateReasonServeFailed, "revision "+k.Revision+" does not serve")
	default:
		rep.degraded = condition(wellknown.TemplateConditionDegraded, false, wellknown.TemplateReasonServing, "the newest revision, "+k.Revision+", serves")
		r.moduleRefused(&rep, k.Source.Ref, k.Source.Digest)
	}
	if serving {
		rep.fields = r.fields(kc.rec.Kind())
		rep.ready = condition(wellknown.TemplateConditionReady, true, wellknown.TemplateReasonServing, "revision "+kc.rec.Kind().Revision+" serves")
		return rep
	}
	rep.fields = r.fields(k)
	rep.ready = rep.degraded
	rep.ready.Type, rep.ready.Status = wellknown.TemplateConditionReady, metav1.ConditionFalse
	return rep
}

// broken is the state of the package name, whose template did not load
// (err names the CUE file:line:col).
func (r *kindReports) broken(s kindRecords, name string, err error) kindReport {
	rep := kindReport{pkg: name, lastError: err.Error()}
	rep.degraded = condition(wellknown.TemplateConditionDegraded, true, wellknown.TemplateReasonTemplateError, err.Error())
	if kc, ok := s.controller(name); ok {
		rep.name, rep.fields = kc.crdName, r.fields(kc.rec.Kind())
		rep.ready = condition(wellknown.TemplateConditionReady, true, wellknown.TemplateReasonServing, "revision "+kc.rec.Kind().Revision+" serves; the newest template did not load")
		return rep
	}
	rep.ready = condition(wellknown.TemplateConditionReady, false, wellknown.TemplateReasonTemplateError, err.Error())
	return rep
}

func removedReport(pkg string) kindReport {
	msg := "the package " + pkg + " is no longer in the templates: the kind is not reconciled; its CRD, CRs and conversions stay"
	return kindReport{pkg: pkg, removed: true,
		ready:    condition(wellknown.TemplateConditionReady, false, wellknown.TemplateReasonKindRemoved, msg),
		degraded: condition(wellknown.TemplateConditionDegraded, false, wellknown.TemplateReasonKindRemoved, msg)}
}

// fields are the status fields of a Template that k describes.
func (r *kindReports) fields(k *template.Kind) *templateState {
	s := &templateState{
		Package: k.Name, Kind: k.Resource.ID(), Revision: k.Revision,
		StorageVersion: k.Resource.Version, ServiceAccount: "shared",
		Source: &templateSource{Ref: k.Source.Ref, Module: k.Source.Module, Version: k.Source.Version, Digest: k.Source.Digest},
	}
	for _, v := range k.Versions {
		s.Versions = append(s.Versions, v.Name)
	}
	if len(s.Versions) == 0 {
		s.Versions = []string{k.Resource.Version}
	}
	if r.identities != nil {
		gk := k.Resource.GroupVersionKind().GroupKind()
		s.ServiceAccount = r.identities.For(gk, k.Resource.CRDName()).String()
	}
	return s
}

// refusalReason is the reason of a serve's error.
func refusalReason(err error) string {
	var s *schemacompat.Refusal
	var r refusedError
	switch {
	case errors.As(err, &s):
		return wellknown.TemplateReasonSchemaRefused
	case errors.As(err, new(admissionError)):
		return wellknown.TemplateReasonAdmissionRefused // admit.go
	case errors.As(err, &r):
		return wellknown.TemplateReasonConversionRefused
	case errors.As(err, new(heldError)):
		return wellknown.TemplateReasonHeldByAnotherOperator // holder.go
	case errors.As(err, new(crdLagError)):
		return wellknown.TemplateReasonCRDBehind // crdlag.go
	}
	return wellknown.TemplateReasonServeFailed
}

func condition(typ string, status bool, reason, msg string) metav1.Condition {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	if status {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// merge is the status prev becomes with r, its object at generation gen:
// a condition keeps its lastTransitionTime unless its status changes.
func (r kindReport) merge(prev *templateState, gen int64) *templateState {
	s := &templateState{}
	if prev != nil {
		*s = *prev
		s.Conditions = append([]metav1.Condition(nil), prev.Conditions...)
	}
	if r.fields != nil {
		conds := s.Conditions
		*s = *r.fields
		s.Conditions = conds
	}
	if !r.removed {
		s.LastError = r.lastError
	}
	for _, c := range []metav1.Condition{r.ready, r.degraded} {
		c.ObservedGeneration = gen
		meta.SetStatusCondition(&s.Conditions, c)
	}
	return s
}
