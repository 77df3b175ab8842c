package operator

import (
	"context"
	"errors"
	"time"

	"github.com/cueop/cueop/engine/schemacompat"
)

// A kind whose serve failed for a reason that time may clear (its CRD's
// apply conflicted with another replica's, the CRD was not established in
// time, a watch could not start) is served again with backoff, from
// unservedRetry to unservedRetryMax, until it serves: before, the error of
// the start's reload was dropped as long as another kind served, and the
// kind stayed unserved, its CRs never reconciled, until a template edit.
// A refused revision (schemaguard.go, conversionRefused) is not retried:
// only a template edit changes its verdict.
const (
	unservedRetry    = time.Second
	unservedRetryMax = time.Minute
)

// refusedError marks a revision refused by its content, not by the moment.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// retriable tells whether a serve's error may pass by itself.
func retriable(err error) bool {
	var r refusedError
	var s *schemacompat.Refusal
	return !errors.As(err, &r) && !errors.As(err, &s) && !errors.As(err, new(heldError))
}

// retryUnserved starts the retries when a kind's serve failed retriably
// (phaseUnserved) and none run. The caller holds lc.mu.
func (lc *kindLifecycle) retryUnserved(ctx context.Context) {
	if lc.records.unserved() == 0 || lc.retrying {
		return
	}
	lc.retrying = true
	lc.controllers.Add(1)
	go func() {
		defer lc.controllers.Done()
		lc.retry(ctx)
	}()
}

// unserved counts the kinds to serve again.
func (rs kindRecords) unserved() int {
	n := 0
	for _, r := range rs {
		if r.phase == phaseUnserved {
			n++
		}
	}
	return n
}

// retry reloads, with backoff, until every kind serves.
func (lc *kindLifecycle) retry(ctx context.Context) {
	for delay := unservedRetry; ; delay = min(delay*2, unservedRetryMax) {
		select {
		case <-ctx.Done():
			lc.mu.Lock()
			lc.retrying = false
			lc.mu.Unlock()
			return
		case <-time.After(delay):
		}
		err := lc.reload(ctx)
		lc.mu.Lock()
		left := lc.records.unserved()
		if left == 0 {
			lc.retrying = false
		}
		lc.mu.Unlock()
		if left == 0 {
			lc.log.Info("every kind serves after a retry")
			return
		}
		lc.log.Error(err, "kinds not served; retrying", "kinds", left, "in", min(delay*2, unservedRetryMax))
	}
}
