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

// noteUnserved records the kinds whose serve failed retriably in this
// reload and starts the retries when some did. The caller holds o.mu.
func (o *Operator) noteUnserved(ctx context.Context, unserved map[string]bool) {
	o.unserved = unserved
	if len(unserved) == 0 || o.retrying {
		return
	}
	o.retrying = true
	o.controllers.Add(1)
	go func() {
		defer o.controllers.Done()
		o.retryUnserved(ctx)
	}()
}

func (o *Operator) retryUnserved(ctx context.Context) {
	for delay := unservedRetry; ; delay = min(delay*2, unservedRetryMax) {
		select {
		case <-ctx.Done():
			o.mu.Lock()
			o.retrying = false
			o.mu.Unlock()
			return
		case <-time.After(delay):
		}
		err := o.reload(ctx)
		o.mu.Lock()
		left := len(o.unserved)
		if left == 0 {
			o.retrying = false
		}
		o.mu.Unlock()
		if left == 0 {
			o.log.Info("every kind serves after a retry")
			return
		}
		o.log.Error(err, "kinds not served; retrying", "kinds", left, "in", min(delay*2, unservedRetryMax))
	}
}
