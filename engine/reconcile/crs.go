package reconcile

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// crs is what the reconciler keeps of each CR between its reconciles: one
// record per CR, in one map under one lock. A record that holds nothing is
// dropped, so memory is bounded by the CRs that have something to keep;
// forget drops what a CR being deleted or gone no longer needs.
//
// Kept elsewhere, as they answer questions across CRs under their own
// locks: a CR's rollout turn (Rollout's turns: how many CRs are in flight,
// which wait next) and what it references (RefIndex: the CRs that read an
// object). forget drops both.
type crs struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*crRecord
	// failing counts the records whose statusErr is set; told: the kind's
	// state of its status writes was told once (statusfail.go).
	failing int
	told    bool
	// hits and misses count the render memo's reuses and renders, for
	// tests and metrics (memo.go).
	hits, misses int64
}

// crRecord is what the reconciler keeps of one CR.
type crRecord struct {
	// behind is the resourceVersion the cache held when cueop last wrote
	// the CR's status or finalizers, until the cache moves past it
	// (status.go: stale).
	behind string
	// statusErr is why the CR's last status write failed, "" when it did
	// not (statusfail.go).
	statusErr string
	// memo is the digest of the CR's last successful render's inputs and
	// that render's result, packed (memo.go).
	memo *memoEntry
	// conflicts are the children its last reconcile found in conflict
	// (ownership.go).
	conflicts map[string]bool
	// busySince is when a series of busy refusals of its render began
	// (busy.go).
	busySince time.Time
	// finalizedUID is the uid of the CR being deleted whose last finalizer
	// cueop took off, until the cache no longer holds it (finalizers.go).
	finalizedUID types.UID
}

func (c *crRecord) empty() bool {
	return c.behind == "" && c.statusErr == "" && c.memo == nil && len(c.conflicts) == 0 &&
		c.busySince.IsZero() && c.finalizedUID == ""
}

// read calls f with key's record (a zero one when there is none), under
// the lock; f must not keep it.
func (s *crs) read(key types.NamespacedName, f func(*crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.m[key]
	if c == nil {
		c = &crRecord{}
	}
	f(c)
}

// update calls f with key's record, under the lock, and drops the record
// when f leaves it empty. The caller holds the lock.
func (s *crs) update(key types.NamespacedName, f func(*crRecord)) {
	c := s.m[key]
	if c == nil {
		c = &crRecord{}
	}
	f(c)
	switch {
	case c.empty():
		delete(s.m, key)
	case s.m == nil:
		s.m = map[types.NamespacedName]*crRecord{key: c}
	default:
		s.m[key] = c
	}
}

// change is update with the lock taken.
func (s *crs) change(key types.NamespacedName, f func(*crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update(key, f)
}

// forget drops what is kept of key between reconciles: all of it when the
// CR is gone; while it is being deleted, all but that cueop took its last
// finalizer off and that its last status write failed. It returns the
// kind's state of its status writes and whether it moved (statusfail.go).
func (s *crs) forget(key types.NamespacedName, gone bool) (StatusFailing, bool) {
	if !gone {
		s.change(key, func(c *crRecord) { *c = crRecord{statusErr: c.statusErr, finalizedUID: c.finalizedUID} })
		return StatusFailing{}, false
	}
	st, moved := s.setStatus(key, "")
	s.change(key, func(c *crRecord) { *c = crRecord{} })
	return st, moved
}

// forget drops what the reconciler keeps of the CR key between reconciles:
// its rollout turn, what it references and its record; all of the record
// once the CR is gone (gone), but that its finalizers came off and that its
// status write failed while it is being deleted.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName, gone bool) {
	if st, moved := r.crs.forget(key, gone); moved && ctx.Err() == nil {
		r.tellStatusFailing(ctx, st)
	}
	r.Rollout.Forget(key)
	r.Refs.Forget(key)
}
