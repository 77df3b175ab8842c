package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// kindLifecycle is the one owner of the kinds an operator serves: it
// loads the templates, admits each kind's revision (its holder, its
// conversion, its schema against the live CRD), has its CRD installed or
// waits for it, has its controller started, updated or stopped (kindRunner),
// and keeps what became of each: serving, waiting for its CRD, refused,
// held by another operator, or to be retried. Every change to that
// record happens under mu, within one reload or one wait's end.
type kindLifecycle struct {
	run        *kindRunner
	crds       *crdWriter
	conv       *conversions // nil without Options.Conversion
	reports    *kindReports
	migrations *migrations
	metrics    *Metrics
	log        logr.Logger
	// load loads the templates (templateLoader.load).
	load func(context.Context) (*template.Set, error)
	// installCRDs, loaded and accept are Options.InstallCRDs,
	// TemplatesLoaded and TemplatesAccepted.
	installCRDs bool
	loaded      func(context.Context, *template.Set)
	accept      func([]template.Source)
	// controllers counts the goroutines Operator.Run waits for.
	controllers *sync.WaitGroup

	// reloading is held across a reload's load and its serve: the watch
	// loop's and the retries' (unserved.go) reloads must not interleave,
	// or one that read the files before an edit could serve its older
	// result after the edit was served.
	reloading sync.Mutex

	mu sync.Mutex
	// records are the kinds of the templates, by package name: what
	// became of each one's newest revision, and the controller serving
	// it (of an older revision, while a newer one is refused).
	records  kindRecords
	retrying bool // unserved.go
}

// kindPhase is where the newest revision of a kind stands. A kind has no
// record before its first serve and none once removed (its controller
// stopped).
type kindPhase string

const (
	// phaseAdmitted: its holder, conversion and schema passed; its CRD
	// is being installed, its controller started or updated.
	phaseAdmitted kindPhase = "Admitted"
	// phaseWaitingForCRD: admitted, and waiting for a CRD cueop does not
	// install (crdwait.go).
	phaseWaitingForCRD kindPhase = "WaitingForCRD"
	// phaseServing: its controller serves the newest revision.
	phaseServing kindPhase = "Serving"
	// phaseRefused: its conversion or schema change was refused; the
	// revision before, if any, serves on. Only an edit changes it.
	phaseRefused kindPhase = "Refused"
	// phaseHeld: another operator instance holds its CRD (holder.go).
	phaseHeld kindPhase = "HeldElsewhere"
	// phaseUnserved: its serve failed for a reason time may clear; it is
	// retried (unserved.go).
	phaseUnserved kindPhase = "Unserved"
)

// kindRecord is what the lifecycle knows of one kind.
type kindRecord struct {
	phase kindPhase
	// serving is the kind's running controller, nil when none runs; it
	// may serve an older revision than the newest (Refused, Unserved).
	serving *kindController
	wait    *crdWait // while WaitingForCRD
	heldBy  string   // the instance holding its CRD, while HeldElsewhere
	// refusalShown: the refusal gauge is set (schemaguard.go), until a
	// revision of the kind serves.
	refusalShown bool
	// refusedServing is the admission's refusal of the revision serving,
	// served all the same as the kind's first (admit.go admissionRefused).
	refusedServing error
	// verdictRevision is the revision the admission last judged, verdict
	// its answer (admit.go kindRecord.judge): only an edit changes it, so that a
	// reload or a retry (unserved.go) of the same revision neither renders
	// it nor asks for its rights again.
	verdictRevision string
	verdict         error
}

// kindRecords are the kinds' records, by package name; read under
// kindLifecycle.mu.
type kindRecords map[string]*kindRecord

// controller is the controller serving the kind name, if any.
func (rs kindRecords) controller(name string) (*kindController, bool) {
	if r := rs[name]; r != nil && r.serving != nil {
		return r.serving, true
	}
	return nil, false
}

// waiting tells whether the kind name waits for its CRD.
func (rs kindRecords) waiting(name string) bool {
	r := rs[name]
	return r != nil && r.wait != nil
}

// controllers are the controllers serving, by package name.
func (rs kindRecords) controllers() map[string]*kindController {
	out := make(map[string]*kindController, len(rs))
	for name, r := range rs {
		if r.serving != nil {
			out[name] = r.serving
		}
	}
	return out
}

// of is the record of the kind name, made when it has none.
func (rs kindRecords) of(name string) *kindRecord {
	r := rs[name]
	if r == nil {
		r = &kindRecord{}
		rs[name] = r
	}
	return r
}

// start has k's controller started and records it as serving. The caller
// holds lc.mu.
func (lc *kindLifecycle) start(ctx context.Context, k *template.Kind) error {
	kc, err := lc.run.start(ctx, k)
	if err != nil {
		return err
	}
	r := lc.records.of(k.Name)
	r.serving, r.phase = kc, phaseServing
	return nil
}

// idle tells whether no kind serves, waits for its CRD, is refused or is
// held elsewhere: an operator so left has nothing to do.
func (lc *kindLifecycle) idle() bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, r := range lc.records {
		if r.serving != nil || r.phase != phaseUnserved {
			return false
		}
	}
	return true
}

// holdings are the kinds served, for the loader's claims
// (templateLoader.holders).
func (lc *kindLifecycle) holdings() []template.Holding {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	served := make([]template.Holding, 0, len(lc.records))
	for name, kc := range lc.records.controllers() {
		served = append(served, template.Holding{Package: name, Kind: kc.rec.Kind().Resource.ID(), CRD: kc.crdName})
	}
	return served
}

// progress is the rollout state of every kind served.
func (lc *kindLifecycle) progress() []KindProgress {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var out []KindProgress
	for name, kc := range lc.records.controllers() {
		res := kc.rec.Kind().Resource
		out = append(out, KindProgress{Kind: res.Kind, Package: name, GVK: res.GroupVersionKind(), Progress: kc.rec.Rollout.Progress()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out
}

// markModuleRefused shows m on the kinds of ref (kindReports.markRefused);
// it answers m as recorded.
func (lc *kindLifecycle) markModuleRefused(m moduleRefusal, ref string) moduleRefusal {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.reports.markRefused(lc.records, m, ref)
}

// reload loads the templates and brings the controllers in line: a changed
// kind gets its new template and every CR of it is reconciled, a new kind
// gets a controller, a removed kind's controller stops. A broken package
// keeps its last good revision serving, and the error is reported.
func (lc *kindLifecycle) reload(ctx context.Context) error {
	lc.reloading.Lock()
	defer lc.reloading.Unlock()
	set, err := lc.load(ctx)
	// The load error was logged by loadFailed: the caller logs the rest.
	return without(lc.reloadSet(ctx, set, err), err)
}

// reloadSet brings the controllers in line with set, the templates as
// loaded (LoadWith's answer, err included).
func (lc *kindLifecycle) reloadSet(ctx context.Context, set *template.Set, err error) error {
	if set == nil {
		lc.loadFailed(ctx, err, nil)
		lc.mu.Lock()
		lc.reports.loadFailed(ctx, lc.records, err) // templatestatus.go
		lc.mu.Unlock()
		return err
	}
	if err != nil {
		lc.loadFailed(ctx, err, set.Broken)
	}
	if lc.loaded != nil {
		lc.loaded(ctx, set)
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	seen, failed := map[string]bool{}, map[string]error{}
	var errs []error
	for _, k := range set.Kinds {
		seen[k.Name] = true
		if err := lc.serve(ctx, k); err != nil {
			errs, failed[k.Name] = append(errs, err), err
			if retriable(err) {
				lc.enter(lc.records.of(k.Name), k, phaseUnserved)
			}
		}
	}
	lc.retryUnserved(ctx) // unserved.go
	for name := range lc.records {
		if !seen[name] && set.Broken[name] == nil {
			lc.remove(ctx, name)
		}
	}
	reports := maps.Clone(failed)
	for name, err := range set.Claims { // template/claims.go: it serves; its Template names the package refused
		if reports[name] == nil {
			reports[name] = err
		}
	}
	lc.reports.reload(ctx, lc.records, set, reports) // templatestatus.go
	err = errors.Join(append(errs, err)...)
	if srcs := accepted(set, failed, err); lc.accept != nil && len(srcs) > 0 { // accepted.go
		lc.accept(srcs)
	}
	return err
}

// serve admits k, the newest revision of its kind, has its CRD installed
// (or waits for it) and starts or updates its controller. The caller
// holds lc.mu.
func (lc *kindLifecycle) serve(ctx context.Context, k *template.Kind) error {
	r := lc.records.of(k.Name)
	if err := lc.checkHolder(ctx, k, r); err != nil { // holder.go
		return err
	}
	kc := r.serving
	if kc != nil && kc.rec.Kind().Revision == k.Revision {
		lc.enter(r, k, phaseServing)
		return r.refusedServing // admit.go: still refused
	}
	admitted := r.judge(ctx, k, lc.run.admit) // admit.go
	if errors.As(admitted, new(reviewError)) {
		return admitted // not a verdict: retried (unserved.go)
	}
	if admitted != nil && kc != nil {
		return lc.admissionRefused(ctx, k, admitted, false)
	}
	err := lc.serveAdmitted(ctx, k, r)
	if r.refusedServing = nil; err == nil && admitted != nil {
		r.refusedServing = lc.admissionRefused(ctx, k, admitted, true)
		return r.refusedServing
	}
	return err
}

// serveAdmitted serves k once admitted: its conversion, its CRD, its
// controller started or updated. The caller holds lc.mu.
func (lc *kindLifecycle) serveAdmitted(ctx context.Context, k *template.Kind, r *kindRecord) error {
	kc := r.serving
	commit, err := lc.conv.prepare(ctx, k) // conversion.go
	if err != nil {
		return lc.conversionRefused(ctx, k, err)
	}
	if err := lc.installCRD(ctx, k, commit); err != nil {
		return err
	}
	if kc != nil && kc.rec.Kind().Resource.GroupVersionKind() != k.Resource.GroupVersionKind() {
		// A new hub version: the controller starts anew at it. Its
		// converter is replaced, never removed, so that the API server's
		// conversions of the stored CRs never fail meanwhile.
		lc.run.stopController(ctx, kc)
		r.serving, kc = nil, nil
	}
	commit()
	lc.enter(r, k, phaseAdmitted)
	lc.metrics.revision(k)
	lc.reports.warn(k)                       // templatewarn.go
	if kc == nil && lc.awaitingCRD(ctx, k) { // crdwait.go: migrated and started once served
		return nil
	}
	lc.migrations.start(ctx, k) // migrate.go
	if kc == nil {
		return lc.start(ctx, k)
	}
	old := kc.rec.Kind()
	kc.rec.SetKind(k)
	lc.enter(r, k, phaseServing)
	lc.log.Info("template changed", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision, "previous", old.Revision)
	go lc.run.resyncAll(ctx, kc, k)
	return nil
}

// installCRD applies k's CRD past the schema guard (crds.go), or, when
// cueop does not install CRDs, checks that the live one has k's fields
// (crdlag.go) and points it at the conversion webhook. A kind's first
// converter, and one that adds a version, converts (commit) before its
// CRD is applied, once the schema guard passed it: the CRD points at this
// webhook and serves the new version as soon as it is established (a CR
// read at it then found no converter, or one without that version). The
// one before comes back if the API server refuses the CRD.
func (lc *kindLifecycle) installCRD(ctx context.Context, k *template.Kind, commit func()) error {
	var early func() (undo func())
	if !lc.conv.covers(k) {
		early = func() func() {
			restore := lc.conv.snapshot(k)
			commit()
			return restore
		}
	}
	if !lc.installCRDs {
		if err := lc.crds.lag(ctx, k); err != nil { // crdlag.go
			return err
		}
		if early != nil {
			early()
		}
		lc.crds.pointLive(ctx, k.Resource.CRDName()) // cabundle.go
		return nil
	}
	err := lc.crds.installThen(ctx, k, early) // crds.go
	var held heldError
	if errors.As(err, &held) { // taken by another operator since checkHolder read it
		return lc.held(ctx, k, lc.records.of(k.Name), held.holder)
	}
	if err != nil {
		return lc.schemaRefused(ctx, k, k.Resource.CRDName(), err) // schemaguard.go
	}
	return nil
}

// enter moves r, the record of k's kind, to phase p. A kind whose refusal
// shows is no longer refused once a revision of it is admitted or serves.
// The caller holds lc.mu.
func (lc *kindLifecycle) enter(r *kindRecord, k *template.Kind, p kindPhase) {
	r.phase = p
	if p != phaseHeld {
		r.heldBy = ""
	}
	if r.refusalShown && p != phaseRefused && p != phaseUnserved && p != phaseHeld {
		r.refusalShown = false
		lc.metrics.schemaRefused(k, false)
		lc.log.Info("schema change no longer refused: the kind serves revision "+k.Revision, "kind", k.Resource.Kind, "resolved", "template refused")
	}
}

// remove forgets the kind name, removed from the templates: its wait for
// its CRD ends, its controller stops (stop). The caller holds lc.mu.
func (lc *kindLifecycle) remove(ctx context.Context, name string) {
	r := lc.records[name]
	delete(lc.records, name)
	lc.stopWaiting(name, r)
	if kc := r.serving; kc != nil {
		lc.stop(ctx, name, kc)
		lc.run.releaseOrdered(ctx, kc) // ordered.go: after its reconciles, which would set it again
	}
}

// stop stops kc, the controller of a removed kind. Its CRs and their children
// are left untouched, and so is its CRD: its last revision keeps
// converting, so that its CRs stay readable at every version it serves.
// The caller holds lc.mu.
func (lc *kindLifecycle) stop(ctx context.Context, name string, kc *kindController) {
	gk := kc.rec.Kind().Resource.GroupVersionKind().GroupKind()
	lc.run.stopController(ctx, kc)
	// The reconciles in flight finish first (their writes are cancelled
	// with them or land now), so that nothing of this controller writes
	// after it is reported stopped.
	select {
	case <-kc.stopped:
	case <-time.After(stopWait):
		lc.log.Info("kind removed: reconciles still in flight", "kind", gk.Kind, "waited", stopWait)
	case <-ctx.Done():
	}
	lc.log.Info("kind removed: controller stopped, CRs and children left as they are, conversions kept", "package", name, "kind", gk.Kind)
}

// stopWait bounds how long a removed kind's reconciles are waited for.
const stopWait = 30 * time.Second

// loadFailed reports a template load error where users look: a log line, a
// metric and, for each broken kind still served by its last good revision,
// a Warning Event on the kind's CRD (kubectl describe crd shows it).
func (lc *kindLifecycle) loadFailed(ctx context.Context, err error, broken map[string]error) {
	lc.log.Error(err, "templates did not load; the last good revision of each kind keeps serving")
	lc.metrics.loadError()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for name, kerr := range broken {
		kc, ok := lc.records.controller(name)
		if !ok {
			continue
		}
		lc.crds.event(ctx, kc.crdName, wellknown.CRDReasonTemplateError,
			fmt.Sprintf("template of %s refused, revision %s keeps serving: %v", name, kc.rec.Kind().Revision, kerr))
	}
}

// conversionRefused reports a revision whose conversion does not compile
// or loses a field, as a refused template (an ERROR line,
// cueop_template_load_errors_total, a TemplateError Event on the CRD and
// cueop_template_refused until a revision of the kind serves): the last
// good revision keeps serving and converting. The caller holds lc.mu.
func (lc *kindLifecycle) conversionRefused(ctx context.Context, k *template.Kind, err error) error {
	serving := "no revision of the kind serves yet"
	if kc, ok := lc.records.controller(k.Name); ok {
		serving = "revision " + kc.rec.Kind().Revision + " keeps serving and converting"
	}
	msg := fmt.Sprintf("template of %s (revision %s) refused: %s: %v", k.Name, k.Revision, serving, err)
	lc.log.Error(nil, msg, "kind", k.Resource.Kind)
	lc.metrics.loadError()
	lc.refuse(k)
	lc.crds.event(ctx, k.Resource.CRDName(), wellknown.CRDReasonTemplateError, msg)
	return refusedError{err} // unserved.go: not retried
}

// repoint installs the CRD of every kind served again (or, when
// cueop does not install CRDs, writes the bundle into the live CRD) when the
// CA bundle changes (a renewed CA, a Secret deleted and made again), so
// that the API server trusts the certificate served. When cueop does not
// install CRDs it also checks the live CRDs every repointEvery: a CRD
// replaced or deleted and applied again from crds/ (a GitOps tool) has
// lost the bundle, and every read at another version than the stored one,
// the kind's own controller's included, would fail until a restart.
func (lc *kindLifecycle) repoint(ctx context.Context) {
	c := lc.crds.conversion
	if c == nil || c.Endpoint.Certs == nil {
		return
	}
	var tick <-chan time.Time
	if !lc.installCRDs {
		t := time.NewTicker(repointEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		changed := c.Endpoint.Certs.BundleChanged()
		lost := false // a new bundle is written; a tick only restores a lost one
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick:
			lost = true
		}
		lc.mu.Lock()
		for _, kc := range lc.records.controllers() {
			if !lc.installCRDs {
				if _, converts := lc.conv.reg.Get(kc.rec.Kind().Resource.GroupVersionKind().GroupKind()); converts {
					if err := lc.crds.pointLiveIf(ctx, kc.crdName, lost); err != nil { // cabundle.go
						lc.log.Error(err, "conversion webhook: CA bundle not written", "crd", kc.crdName)
					}
				}
			} else if err := lc.crds.install(ctx, kc.rec.Kind()); err != nil {
				lc.log.Error(err, "conversion webhook: CA bundle not written", "crd", kc.crdName)
			}
		}
		lc.mu.Unlock()
	}
}

// unwarm removes the informers warmParents started for kinds that are not
// served after the first serve (refused, or waiting for their CRD): they
// would otherwise hold a cache and a watch of CRs nobody reconciles.
func (lc *kindLifecycle) unwarm(ctx context.Context, warmed []schema.GroupVersionKind) {
	// Under the lock, as stopController removes one: a kind started
	// meanwhile (unserved.go, crdwait.go) would take the informer first.
	lc.mu.Lock()
	defer lc.mu.Unlock()
	served := map[schema.GroupVersionKind]bool{}
	for _, kc := range lc.records.controllers() {
		served[kc.rec.Kind().Resource.GroupVersionKind()] = true
	}
	for _, gvk := range warmed {
		if served[gvk] {
			continue
		}
		if err := lc.run.parents.RemoveInformer(ctx, parentObject(gvk)); err != nil {
			lc.log.Error(err, "remove informer", "kind", gvk.Kind)
		}
	}
}
