package operator

import (
	"context"
	"errors"
	"time"

	"github.com/cueop/cueop/engine/template"
)

// A kind whose CRD the API server does not serve yet, when cueop does not
// install CRDs (--install-crds=false: the CRDs come from crds/, a GitOps
// tool, a platform team), waits for it in the background: the other kinds
// are served meanwhile, and its controller starts once the CRD is there,
// however late, with the conversion webhook pointed at this operator.
// Starting a controller on a kind the API server does not know would have
// it give up after its cache sync timeout and never serve the kind.

// A waiting kind asks the API server for its CRD crdPoll after it began to
// wait, then half as long again after each miss, up to crdPollMax: a CRD
// applied soon after is found within seconds, and a hundred kinds waiting
// for hours cost a few discovery requests a second, not fifty.
const (
	crdPoll    = 2 * time.Second
	crdPollMax = 30 * time.Second
)

// awaitingCRD tells whether k waits for its CRD: a wait is started for it
// unless one for this revision runs. The caller holds o.mu.
func (o *Operator) awaitingCRD(ctx context.Context, k *template.Kind) bool {
	if o.opts.InstallCRDs {
		return false
	}
	if w, ok := o.waiting[k.Name]; ok {
		if w.revision == k.Revision {
			return true
		}
		w.cancel() // an older revision waited: this one takes over
		delete(o.waiting, k.Name)
	}
	if o.mapped(k) {
		return false
	}
	o.log.Info("kind waits for its CRD, which cueop does not install (--install-crds=false): apply it (crds/ of `cueop manifests`) and the kind is served",
		"kind", k.Resource.Kind, "crd", k.Resource.CRDName(), "version", k.Resource.Version)
	wctx, cancel := context.WithCancel(ctx)
	if o.waiting == nil {
		o.waiting = map[string]crdWait{}
	}
	o.waiting[k.Name] = crdWait{revision: k.Revision, cancel: cancel}
	o.controllers.Add(1)
	go func() {
		defer o.controllers.Done()
		o.startWhenServed(ctx, wctx, k)
	}()
	return true
}

// crdWait is a kind's wait for its CRD.
type crdWait struct {
	revision string
	cancel   context.CancelFunc
}

// startWhenServed starts k's controller once its CRD serves k's version,
// unless the wait was cancelled (a newer revision, the kind removed, the
// operator stopping).
func (o *Operator) startWhenServed(ctx, wctx context.Context, k *template.Kind) {
	for delay := crdPoll; ; delay = min(delay*3/2, crdPollMax) {
		select {
		case <-wctx.Done():
			return
		case <-time.After(delay):
		}
		if o.mapped(k) {
			break
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if wctx.Err() != nil {
		return
	}
	delete(o.waiting, k.Name)
	// The CRD that came may name another operator instance (holder.go):
	// neither pointed at this operator nor served, as at a reload.
	if err := o.checkHolder(ctx, k); errors.As(err, new(heldError)) {
		o.reports.served(ctx, servedKinds{o.kinds, o.waiting}, k, err) // templatestatus.go
		return
	}
	o.pointLive(ctx, k.Resource.CRDName()) // cabundle.go
	o.migrations.start(ctx, k)             // migrate.go
	err := o.start(ctx, k)
	if err != nil {
		o.log.Error(err, "kind not served", "kind", k.Resource.Kind)
	}
	o.reports.served(ctx, servedKinds{o.kinds, o.waiting}, k, err) // templatestatus.go
}

// mapped tells whether the API server serves k's kind at its version.
func (o *Operator) mapped(k *template.Kind) bool {
	gvk := k.Resource.GroupVersionKind()
	_, err := o.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// stopWaiting ends the wait of the kind name for its CRD, if any. The
// caller holds o.mu.
func (o *Operator) stopWaiting(name string) {
	if w, ok := o.waiting[name]; ok {
		w.cancel()
		delete(o.waiting, name)
		o.log.Info("kind removed while it waited for its CRD: it will not be served", "package", name)
	}
}

// anyWaiting reports whether a kind waits for its CRD.
func (o *Operator) anyWaiting() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.waiting) > 0
}
