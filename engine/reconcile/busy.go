package reconcile

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A render refused because the CR's tenant holds its share of the render
// workers (engine/worker's Busy) is a matter of a moment on a busy
// machine: the CR is retried with backoff, and its status is not written
// for it during busyGrace, so that a burst costs no status write (a write
// saying it waits, then one saying it converged). A CR refused for longer
// says that it waits (pending.go), so that a starved CR never reads
// Converged for long.
const busyGrace = 10 * time.Second

// transient is an error that says a retry will do (engine/worker's Busy).
type transient interface{ Transient() bool }

// isTransient tells whether err is a transient refusal of a render.
func isTransient(err error) bool {
	var t transient
	return errors.As(err, &t) && t.Transient()
}

// busyQuiet records a busy refusal of key's render and tells whether it is
// still within busyGrace of the first of the series.
func (s *crs) busyQuiet(key types.NamespacedName, now time.Time) bool {
	first := now
	s.change(key, func(c *crRecord) {
		if c.busySince.IsZero() {
			c.busySince = now
		}
		first = c.busySince
	})
	return now.Sub(first) < busyGrace
}

// busyEnd ends key's series (rendered).
func (s *crs) busyEnd(key types.NamespacedName) {
	s.change(key, func(c *crRecord) { c.busySince = time.Time{} })
}
