package reconcile

// outcome is what a stage of a reconcile implies for the CR's conditions,
// beside what it did; the zero value implies nothing. Each stage returns
// one, and note records it: the one place a run's stall, wait, missing
// references and deletion wait are set, which conditions (status.go) turns
// into the CR's conditions.
type outcome struct {
	// stall: the CR cannot progress without a change of spec or template
	// (Stalled=True).
	stall *stall
	// wait: why the CR is not converged yet (Reconciling=True).
	wait string
	// missing: the references not found, one line each; the CR waits for
	// them, not rendered (wellknown.ReasonReferenceNotFound).
	missing string
	// deleting: which wave the deletion of the CR waits for (ordered.go).
	deleting string
	// pending: why the CR's current inputs were not rendered; it waits,
	// and says so (pending.go).
	pending string
	// quiet: the render was refused as busy within its grace (busy.go):
	// the status is not written for it.
	quiet bool
}

// stall is why a CR cannot progress without a change of spec or template.
type stall struct {
	reason, message string
}

// stallOf is the outcome of a stall for reason.
func stallOf(reason, message string) outcome {
	return outcome{stall: &stall{reason: reason, message: message}}
}

// stalledBy is the outcome of s, a stall or nil.
func stalledBy(s *stall) outcome { return outcome{stall: s} }

// waitFor is the outcome of a CR that waits for why.
func waitFor(why string) outcome { return outcome{wait: why} }

// note records what o implies, each part replacing what an earlier stage
// said of the same, and tells whether the CR is stalled: the stages after
// a stall do not run.
func (r *run) note(o outcome) (stalled bool) {
	if o.pending != "" {
		r.pending = o.pending
	}
	r.quiet = r.quiet || o.quiet
	if o.stall != nil {
		r.stalled = o.stall
	}
	if o.wait != "" {
		r.waiting = o.wait
	}
	if o.missing != "" {
		r.missing = o.missing
	}
	if o.deleting != "" {
		r.deleting = o.deleting
	}
	return r.stalled != nil
}

// wait is why the CR is not converged yet, "" when it is: what a stage
// said, else, for a render whose children are not all ready, that.
func (r *run) wait() string {
	if r.waiting == "" && r.res != nil && !r.res.Ready {
		return "waiting for children to be ready"
	}
	return r.waiting
}
