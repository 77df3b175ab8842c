package reconcile

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// crs is what the reconciler keeps of each CR between its reconciles: one
// record per CR, in one map under one lock, its rollout turn (Rollout) and
// what it references (RefIndex) included. A record that holds nothing is
// dropped, so memory is bounded by the CRs that have something to keep;
// forget drops what a CR being deleted or gone no longer needs.
type crs struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*crRecord
	// refNS indexes, by namespace, the records that hold references, for
	// RefIndex.Match; update keeps it.
	refNS map[string]map[types.NamespacedName]bool
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
	// turn is its place in its kind's rollout (rollout.go), the Rollout's
	// to change and to forget.
	turn turn
	// refs are what it references, and the key of what they were computed
	// from (references.go).
	refs refEntry
}

func (c *crRecord) empty() bool {
	return c.behind == "" && c.statusErr == "" && c.memo == nil && len(c.conflicts) == 0 &&
		c.busySince.IsZero() && c.finalizedUID == "" && c.turn == (turn{}) && !c.refs.any()
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
	had := c.refs.any()
	f(c)
	if has := c.refs.any(); has != had {
		s.indexRefs(key, has)
	}
	switch {
	case c.empty():
		delete(s.m, key)
	case s.m == nil:
		s.m = map[types.NamespacedName]*crRecord{key: c}
	default:
		s.m[key] = c
	}
}

// indexRefs files key under its namespace in refNS, or takes it out.
func (s *crs) indexRefs(key types.NamespacedName, has bool) {
	ns := s.refNS[key.Namespace]
	switch {
	case has && ns == nil:
		if s.refNS == nil {
			s.refNS = map[string]map[types.NamespacedName]bool{}
		}
		s.refNS[key.Namespace] = map[types.NamespacedName]bool{key: true}
	case has:
		ns[key] = true
	default:
		delete(ns, key)
		if len(ns) == 0 {
			delete(s.refNS, key.Namespace)
		}
	}
}

// each calls f with every record, under the lock, and drops those f
// leaves empty; f must not change what records reference (refs).
func (s *crs) each(f func(types.NamespacedName, *crRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, c := range s.m {
		f(key, c)
		if c.empty() {
			delete(s.m, key)
		}
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
// finalizer off and that its last status write failed. Its rollout turn
// is left to its Rollout (Rollout.Forget), which counts the turns. It
// returns the kind's state of its status writes and whether it moved
// (statusfail.go).
func (s *crs) forget(key types.NamespacedName, gone bool) (StatusFailing, bool) {
	if !gone {
		s.change(key, func(c *crRecord) {
			*c = crRecord{statusErr: c.statusErr, finalizedUID: c.finalizedUID, turn: c.turn}
		})
		return StatusFailing{}, false
	}
	st, moved := s.setStatus(key, "")
	s.change(key, func(c *crRecord) { *c = crRecord{turn: c.turn} })
	return st, moved
}

// forget drops what the reconciler keeps of the CR key between reconciles,
// its record (what it references included): all of it once the CR is gone
// (gone), but that its finalizers came off and that its status write
// failed while it is being deleted; its rollout turn first, as the rollout
// counts the turns.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName, gone bool) {
	r.Rollout.Forget(key)
	if st, moved := r.crs.forget(key, gone); moved && ctx.Err() == nil {
		r.tellStatusFailing(ctx, st)
	}
}
