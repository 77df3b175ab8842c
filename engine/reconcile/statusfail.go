package reconcile

import (
	"context"

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

// setStatus records the outcome of key's status write (err "": written,
// or nothing to write) and returns the kind's state and whether it moved
// between none failing and some (or is told for the first time: a kind's
// controller started anew must clear what the one before it set), so that
// the kind's state (Host.StatusFailing) changes only when the
// first CR fails and when the last one is written. The state's First and
// Err are found only when it moved (one pass over the records), so that
// an outcome that does not move it costs O(1) under the lock every
// reconcile of the kind takes, however many CRs fail.
func (s *crs) setStatus(key types.NamespacedName, err string) (StatusFailing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.failing
	s.update(key, func(c *crRecord) {
		switch {
		case c.statusErr == "" && err != "":
			s.failing++
		case c.statusErr != "" && err == "":
			s.failing--
		}
		c.statusErr = err
	})
	st := StatusFailing{Failing: s.failing}
	moved := !s.told || (before == 0) != (st.Failing == 0)
	s.told = true
	if !moved {
		return st, false
	}
	var first *types.NamespacedName
	for k, c := range s.m {
		if c.statusErr != "" && (first == nil || k.Namespace < first.Namespace || k.Namespace == first.Namespace && k.Name < first.Name) {
			first = &k
		}
	}
	if first != nil {
		st.First, st.Err = first.String(), s.m[*first].statusErr
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
	st, moved := r.crs.setStatus(types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}, msg)
	if moved {
		r.tellStatusFailing(ctx, st)
	}
}
