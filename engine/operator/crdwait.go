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
// unless one for this revision runs. The caller holds lc.mu.
func (lc *kindLifecycle) awaitingCRD(ctx context.Context, k *template.Kind) bool {
	if lc.installCRDs {
		return false
	}
	r := lc.records.of(k.Name)
	if w := r.wait; w != nil {
		if w.revision == k.Revision {
			lc.enter(r, k, phaseWaitingForCRD)
			return true
		}
		w.cancel() // an older revision waited: this one takes over
		r.wait = nil
	}
	if lc.run.mapped(k) {
		return false
	}
	lc.log.Info("kind waits for its CRD, which cueop does not install (--install-crds=false): apply it (crds/ of `cueop manifests`) and the kind is served",
		"kind", k.Resource.Kind, "crd", k.Resource.CRDName(), "version", k.Resource.Version)
	wctx, cancel := context.WithCancel(ctx)
	r.wait = &crdWait{revision: k.Revision, cancel: cancel}
	lc.enter(r, k, phaseWaitingForCRD)
	lc.controllers.Add(1)
	go func() {
		defer lc.controllers.Done()
		lc.startWhenServed(ctx, wctx, k)
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
func (lc *kindLifecycle) startWhenServed(ctx, wctx context.Context, k *template.Kind) {
	for delay := crdPoll; ; delay = min(delay*3/2, crdPollMax) {
		select {
		case <-wctx.Done():
			return
		case <-time.After(delay):
		}
		if lc.run.mapped(k) {
			break
		}
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	r := lc.records[k.Name]
	if wctx.Err() != nil || r == nil {
		return
	}
	r.wait = nil
	// The CRD that came may name another operator instance (holder.go):
	// neither pointed at this operator nor served, as at a reload.
	if err := lc.checkHolder(ctx, k, r); errors.As(err, new(heldError)) {
		lc.reports.served(ctx, lc.records, k, err) // templatestatus.go
		return
	}
	err := lc.crds.lag(ctx, k) // crdlag.go: the CRD that came may lack k's fields
	if err == nil {
		lc.crds.pointLive(ctx, k.Resource.CRDName()) // cabundle.go
		lc.migrations.start(ctx, k)                  // migrate.go
		err = lc.start(ctx, k)
	}
	if err != nil {
		lc.log.Error(err, "kind not served; retrying", "kind", k.Resource.Kind)
		lc.enter(r, k, phaseUnserved)
		lc.retryUnserved(ctx) // unserved.go
	}
	lc.reports.served(ctx, lc.records, k, err) // templatestatus.go
}

// stopWaiting ends the wait of the kind name, r, for its CRD, if any. The
// caller holds lc.mu.
func (lc *kindLifecycle) stopWaiting(name string, r *kindRecord) {
	if r != nil && r.wait != nil {
		r.wait.cancel()
		r.wait = nil
		lc.log.Info("kind removed while it waited for its CRD: it will not be served", "package", name)
	}
}
