package reconcile

import (
	"context"
	"sync"

	"github.com/cueop/cueop/engine/wellknown"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// StatusObserver, when the Observer implements it, is told of each
// status write of a CR of kind that failed.
type StatusObserver interface {
	StatusWriteFailed(kind string)
}

// StatusFailing is the kind's state of its status writes: Failing CRs
// whose last status write failed, First the first of them (ns/name) and
// its error.
type StatusFailing struct {
	Failing    int
	First, Err string
}

// statusFailures are the CRs whose last status write failed, with the
// error, so that the kind's state (Reconciler.OnStatusFailing) changes
// only when the first one fails and when the last one is written.
type statusFailures struct {
	mu      sync.Mutex
	failing map[types.NamespacedName]string
	told    bool // the kind's state was told once: a new reconciler tells it at its first outcome
}

// set records the outcome of key's status write (err "": written, or
// nothing to write) and returns the kind's state and whether it moved
// between none failing and some (or is told for the first time: a kind's
// controller started anew must clear what the one before it set). The
// state's First and Err are found only when it moved (one pass over the
// failing CRs), so that an outcome that does not move it costs O(1) under
// the lock every reconcile of the kind takes, however many CRs fail.
func (f *statusFailures) set(key types.NamespacedName, err string) (StatusFailing, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before := len(f.failing)
	if err == "" {
		delete(f.failing, key)
	} else {
		if f.failing == nil {
			f.failing = map[types.NamespacedName]string{}
		}
		f.failing[key] = err
	}
	st := StatusFailing{Failing: len(f.failing)}
	moved := !f.told || (before == 0) != (st.Failing == 0)
	f.told = true
	if !moved {
		return st, false
	}
	var first *types.NamespacedName
	for k := range f.failing {
		if first == nil || k.Namespace < first.Namespace || k.Namespace == first.Namespace && k.Name < first.Name {
			first = &k
		}
	}
	if first != nil {
		st.First, st.Err = first.String(), f.failing[*first]
	}
	return st, true
}

// statusWritten tells how the status write of cr went (err nil: written,
// or nothing to write): a failure is a Warning Event on the CR and the
// observer's count, and the kind's state moves when the first CR fails
// or the last failing one is written.
func (r *Reconciler) statusWritten(ctx context.Context, cr *unstructured.Unstructured, err error) {
	if ctx.Err() != nil {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
		if r.Recorder != nil {
			r.Recorder.Event(cr, corev1.EventTypeWarning, wellknown.ReasonStatusWriteFailed,
				"status not written, the CR shows its last written status, retried with backoff: "+msg)
		}
		if o, ok := r.Observer.(StatusObserver); ok {
			o.StatusWriteFailed(r.Kind().Resource.Kind)
		}
	}
	st, moved := r.statusFailures.set(types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}, msg)
	if moved && r.OnStatusFailing != nil {
		r.OnStatusFailing(ctx, st)
	}
}

// forgetStatus drops a CR gone from the failing ones.
func (r *Reconciler) forgetStatus(ctx context.Context, key types.NamespacedName) {
	st, moved := r.statusFailures.set(key, "")
	if moved && r.OnStatusFailing != nil && ctx.Err() == nil {
		r.OnStatusFailing(ctx, st)
	}
}
