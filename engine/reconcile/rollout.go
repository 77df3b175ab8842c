// The rollout: which template revision each CR renders with (Choose), and
// the bookkeeping after its reconcile (Done, Park), in the CR's record.
//
// It must not reconcile: it chooses, and wakes the CRs whose turn came
// (OnWake).

package reconcile

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/template"
)

// Rollout paces a kind's move to a new template revision: at most
// MaxInFlight CRs render with the new revision until they converge; the
// others keep being served by the revision they were last rendered with
// meanwhile, so edits in quick succession (A to B to C) stay paced: a CR
// still on A waits on A, not on B. When
// HaltAfter of the CRs moved to the new revision end up Stalled, the rollout
// halts: the CRs not yet moved stay on the previous revision until a new
// revision (a fixed template) resumes it. A CR's spec changes are never held
// back: a waiting CR is rendered with the previous revision at once. After
// a restart the previous revision is unknown: see Choose.
type Rollout struct {
	// MaxInFlight bounds the CRs moving at once; 0 means unlimited.
	MaxInFlight int
	// HaltAfter is the number of moved CRs found Stalled that halts the
	// rollout; 0 means 3.
	HaltAfter int
	// OnHalt is called once per halted rollout, with the revision and the
	// stalled CRs. OnWake enqueues a CR whose turn has come. Both are called
	// without the lock held and may be nil.
	OnHalt func(k *template.Kind, stalled []types.NamespacedName)
	OnWake func(key types.NamespacedName)

	mu       sync.Mutex
	current  *template.Kind
	previous *template.Kind // the last good revision, for CRs left on a halted one
	// served are the revisions this process served and did not halt, that
	// CRs were last rendered with: a waiting CR is rendered with its own.
	served map[string]*template.Kind
	halts  map[string]bool // revisions whose rollout halted
	halted bool
	crsOn  map[string]int // CRs by turn.rev, to forget revisions no CR is on
	// crs holds the CRs' places in the rollout, each in its CR's record
	// (crRecord.turn): the reconciler's records when NewReconciler made
	// the rollout. The counts are of the turns in flight, waiting and
	// stalled. Lock order: mu, then crs's.
	crs                        *crs
	inFlight, waiting, stalled int
}

// turn is a CR's place in the rollout.
type turn struct {
	inFlight, waiting bool
	// stalled: moved to the current revision, and found Stalled.
	stalled bool
	// drifted: a child of it was deleted or taken over by hand since its
	// last reconcile (Drifted).
	drifted bool
	// rev is the revision it was last rendered with.
	rev string
}

// withTurn calls f with key's turn, in its record, under the records'
// lock; a record left empty is dropped. The caller holds ro.mu.
func (ro *Rollout) withTurn(key types.NamespacedName, f func(t *turn)) {
	ro.crs.change(key, func(c *crRecord) { f(&c.turn) })
}

// setInFlight, setWaiting and setStalled set a flag of t and keep its
// count. The caller holds the lock.
func (ro *Rollout) setInFlight(t *turn, on bool) { flag(&t.inFlight, &ro.inFlight, on) }
func (ro *Rollout) setWaiting(t *turn, on bool)  { flag(&t.waiting, &ro.waiting, on) }
func (ro *Rollout) setStalled(t *turn, on bool)  { flag(&t.stalled, &ro.stalled, on) }

func flag(f *bool, count *int, on bool) {
	switch {
	case on && !*f:
		*count++
	case !on && *f:
		*count--
	}
	*f = on
}

// keysOf are the CRs whose turn has is, sorted. The caller holds ro.mu.
func (ro *Rollout) keysOf(is func(*turn) bool) []types.NamespacedName {
	var out []types.NamespacedName
	ro.crs.each(func(k types.NamespacedName, c *crRecord) {
		if is(&c.turn) {
			out = append(out, k)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// NewRollout starts serving k.
func NewRollout(k *template.Kind) *Rollout { return newRollout(k, &crs{}) }

// newRollout starts serving k, with the turns in records.
func newRollout(k *template.Kind, records *crs) *Rollout {
	ro := &Rollout{crs: records, crsOn: map[string]int{},
		served: map[string]*template.Kind{}, halts: map[string]bool{}}
	ro.SetKind(k)
	return ro
}

// Current is the newest revision.
func (ro *Rollout) Current() *template.Kind {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return ro.current
}

// SetKind starts a rollout to k. A halted rollout keeps its last good
// revision as the one to fall back on; otherwise the revision being
// replaced becomes it.
func (ro *Rollout) SetKind(k *template.Kind) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.current != nil && !ro.halted {
		ro.previous = ro.current
	}
	if ro.current != nil && ro.halted {
		ro.halts[ro.current.Revision] = true
		delete(ro.served, ro.current.Revision)
	}
	ro.current = k
	delete(ro.halts, k.Revision)
	ro.served[k.Revision] = k
	ro.forgetUnused()
	ro.halted = false
	ro.crs.each(func(_ types.NamespacedName, c *crRecord) { c.turn = turn{rev: c.turn.rev} })
	ro.inFlight, ro.waiting, ro.stalled = 0, 0, 0
}

// Choose returns the revision to render a CR with, given the revision it
// was last rendered with (status.revision, "" for a new CR) and whether its
// spec changed since (generation != status.observedGeneration).
//
// A CR over the budget waits its turn, rendered meanwhile with the revision
// it is on, or with the last good one when that revision's rollout halted.
// A CR rendered with a revision this process never served (it was edited
// while the operator was down) moves like any other, within the budget.
// While it waits its turn Choose returns nil, as there is no revision to
// render it with: its children and status stay as the earlier revision left
// them, and a halted rollout leaves it so. A spec change moves it at once
// unless the rollout is halted, and so does a child of it deleted or taken
// over by hand (Drifted): drift is repaired at the new revision, as that CR
// was last rendered with a revision this process cannot render.
func (ro *Rollout) Choose(key types.NamespacedName, rev string, specChanged bool) *template.Kind {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	var out *template.Kind
	ro.withTurn(key, func(t *turn) {
		drifted := t.drifted
		t.drifted = false
		own, known := ro.served[rev]
		if !known && ro.halts[rev] {
			own, known = ro.previous, ro.previous != nil
		}
		switch {
		case rev == "", rev == ro.current.Revision, t.inFlight:
			out = ro.current
			return
		case !ro.halted && (ro.MaxInFlight == 0 || ro.inFlight < ro.MaxInFlight),
			!known && (specChanged || drifted) && !ro.halted:
			ro.setWaiting(t, false)
			ro.setInFlight(t, true)
			out = ro.current
			return
		}
		ro.setWaiting(t, true)
		ro.setRev(t, rev)
		out = own
	})
	return out
}

// Done records how a CR's reconcile with k ended.
func (ro *Rollout) Done(key types.NamespacedName, k *template.Kind, converged, stalled bool) {
	ro.mu.Lock()
	halting, freed := false, false
	ro.withTurn(key, func(t *turn) {
		ro.setRev(t, k.Revision)
		if k != ro.current || !t.inFlight {
			return
		}
		switch {
		case stalled:
			ro.setStalled(t, true)
			if !ro.halted && ro.stalled >= ro.haltAfter() {
				ro.halted, halting = true, true
			}
		case converged:
			ro.setInFlight(t, false)
			ro.setStalled(t, false)
			freed = true
		}
	})
	var wake, halt []types.NamespacedName
	switch {
	case halting:
		halt = ro.keysOf(func(t *turn) bool { return t.stalled })
		wake = ro.keysOf(func(t *turn) bool { return t.waiting })
	case freed:
		wake = ro.nextWaiting()
	}
	ro.mu.Unlock()
	ro.notify(k, halt, wake)
}

func (ro *Rollout) notify(k *template.Kind, halt, wake []types.NamespacedName) {
	if len(halt) > 0 && ro.OnHalt != nil {
		ro.OnHalt(k, halt)
	}
	if ro.OnWake != nil {
		for _, key := range wake {
			ro.OnWake(key)
		}
	}
}

// Park records that a CR given a revision was not rendered for want of
// something outside the rollout (a referenced object that does not exist):
// it frees its slot for the next waiting CR and stays on rev, the revision
// it was last rendered with, until its own event (the object's creation)
// brings it back to Choose like any other CR.
func (ro *Rollout) Park(key types.NamespacedName, rev string) {
	ro.mu.Lock()
	wasInFlight := false
	ro.withTurn(key, func(t *turn) {
		wasInFlight = t.inFlight
		ro.setInFlight(t, false)
		ro.setStalled(t, false)
		if rev != "" {
			ro.setRev(t, rev)
		}
	})
	var wake []types.NamespacedName
	if wasInFlight {
		wake = ro.nextWaiting()
	}
	ro.mu.Unlock()
	ro.notify(nil, nil, wake)
}

// Drifted records that a child of a CR was deleted or changed by another
// field manager on fields cueop applied: a CR waiting its turn on a
// revision this process cannot render moves at its next Choose (drift
// repair is never held back by the rollout).
func (ro *Rollout) Drifted(key types.NamespacedName) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	ro.withTurn(key, func(t *turn) {
		if t.waiting {
			t.drifted = true
		}
	})
}

// Forget drops a deleted CR's turn (the rest of its record is the
// reconciler's to forget: crs.forget).
func (ro *Rollout) Forget(key types.NamespacedName) {
	ro.mu.Lock()
	wasInFlight := false
	ro.withTurn(key, func(t *turn) {
		wasInFlight = t.inFlight
		ro.setInFlight(t, false)
		ro.setWaiting(t, false)
		ro.setStalled(t, false)
		ro.setRev(t, "")
		*t = turn{}
	})
	var wake []types.NamespacedName
	if wasInFlight {
		wake = ro.nextWaiting()
	}
	ro.mu.Unlock()
	ro.notify(nil, nil, wake)
}

// nextWaiting picks the waiting CR to wake for a freed slot and gives it
// the slot, so that the slot is freed again (and the next CR woken) however
// its reconcile ends, even when the CR turns out deleted. The caller holds
// ro.mu.
func (ro *Rollout) nextWaiting() []types.NamespacedName {
	if ro.halted || ro.waiting == 0 {
		return nil
	}
	var next types.NamespacedName
	found := false
	ro.crs.each(func(k types.NamespacedName, c *crRecord) {
		if c.turn.waiting && (!found || k.String() < next.String()) {
			next, found = k, true
		}
	})
	ro.withTurn(next, func(t *turn) {
		ro.setWaiting(t, false)
		ro.setInFlight(t, true)
	})
	return []types.NamespacedName{next}
}

// setRev records the revision a CR was last rendered with ("" when it is
// gone) in t, its turn, forgetting a served revision no CR is on any more.
// The caller holds the lock.
func (ro *Rollout) setRev(t *turn, rev string) {
	old := t.rev
	if old == rev {
		return
	}
	if old != "" {
		ro.crsOn[old]--
		if ro.crsOn[old] <= 0 {
			delete(ro.crsOn, old)
			ro.forget(old)
		}
	}
	t.rev = rev
	if rev != "" {
		ro.crsOn[rev]++
	}
}

// forgetUnused forgets the served revisions no CR is on. The caller holds
// the lock.
func (ro *Rollout) forgetUnused() {
	for rev := range ro.served {
		if ro.crsOn[rev] == 0 {
			ro.forget(rev)
		}
	}
	for rev := range ro.halts {
		if ro.crsOn[rev] == 0 {
			delete(ro.halts, rev)
		}
	}
}

// forget drops a served revision unless it is the current or the last good
// one; its compiled template is then left to the garbage collector.
func (ro *Rollout) forget(rev string) {
	if rev != ro.current.Revision && (ro.previous == nil || rev != ro.previous.Revision) {
		delete(ro.served, rev)
	}
	if ro.crsOn[rev] == 0 {
		delete(ro.halts, rev)
	}
}

func (ro *Rollout) haltAfter() int {
	if ro.HaltAfter > 0 {
		return ro.HaltAfter
	}
	return 3
}

// Progress is a rollout's state, for metrics and `cueop dev`.
type Progress struct {
	Revision, Previous string
	// PerRevision counts the CRs by the revision they were last rendered
	// with.
	PerRevision                map[string]int
	InFlight, Waiting, Stalled int
	Halted                     bool
}

// Progress returns the rollout's state.
func (ro *Rollout) Progress() Progress {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	p := Progress{Revision: ro.current.Revision, PerRevision: map[string]int{},
		InFlight: ro.inFlight, Waiting: ro.waiting, Stalled: ro.stalled, Halted: ro.halted}
	if ro.previous != nil {
		p.Previous = ro.previous.Revision
	}
	ro.crs.each(func(_ types.NamespacedName, c *crRecord) {
		if c.turn.rev != "" {
			p.PerRevision[c.turn.rev]++
		}
	})
	return p
}
