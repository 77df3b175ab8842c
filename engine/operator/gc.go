package operator

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target (GOGC) that cueop run
// sets unless $GOGC says otherwise. A reconcile allocates far more than it
// keeps (a render's CUE values, the objects decoded from the API server's
// answers): with Go's default of 100 the heap peaks at about twice what is
// live. At 50 the peak heap in use fell from 52 to 32 MiB with 300 converged
// RedisClusters, and peak RSS from 113 to 90 MiB, for about 5% more CPU
// (docs/benchmarks.md).
const DefaultGCPercent = 50

// TuneGC sets DefaultGCPercent when $GOGC is unset; it returns the
// percentage in effect.
func TuneGC() int {
	if v := os.Getenv("GOGC"); v != "" {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}
