package reconcile

import (
	"errors"
	"sync"
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

// busySince are the CRs whose renders were refused as busy, since when.
type busySince struct {
	mu sync.Mutex
	m  map[types.NamespacedName]time.Time
}

// quiet records a busy refusal of key's render and tells whether it is
// still within busyGrace of the first of the series.
func (b *busySince) quiet(key types.NamespacedName, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[types.NamespacedName]time.Time{}
	}
	first, ok := b.m[key]
	if !ok {
		b.m[key], first = now, now
	}
	return now.Sub(first) < busyGrace
}

// forget ends key's series (rendered, or gone).
func (b *busySince) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}
