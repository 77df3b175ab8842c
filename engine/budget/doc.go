// Package budget bounds a CUE evaluation in time and memory.
//
// CUE v0.17.1 cannot stop an evaluation: cuecontext has no option for it,
// adt.OpContext takes no context.Context and checks no deadline, and
// neither CUE_DEBUG nor CUE_EXPERIMENT limits work or allocations (its
// stats.Counts are only read after the fact). So Run evaluates on a
// goroutine of its own and the caller stops waiting when the budget runs
// out: the caller is free at once, the evaluation runs on, abandoned, until
// CUE finishes it. At most MaxAbandoned abandoned evaluations of one key
// (one kind) may run at a time; while that many do, Run refuses new
// evaluations of the key at once (Busy) rather than let them pile up.
//
// Time is CPU time, measured the same way as memory (below) from the
// process's CPU time (getrusage), so that a loaded machine does not make
// an ordinary evaluation run out; the wall-clock time is bounded too, at
// WallFactor times the CPU budget.
//
// Memory is the bytes allocated while the evaluation runs. Go has no
// per-goroutine allocation counter and CUE no allocation hook, so a watchdog
// reads the process's cumulative heap allocations (runtime/metrics
// /gc/heap/allocs:bytes) every few milliseconds and shares each tick's bytes
// equally among the evaluations running at that tick, abandoned ones
// included. An evaluation that allocates alone is measured exactly (to the
// allocations of the rest of the process during it, which is an
// over-estimate); several running together are each charged their share, so
// a runaway evaluation dominates quickly while ordinary ones next to it stay
// far inside the budget.
//
// It must not know what it bounds: no template contract, no client; any
// evaluation handed to it is bounded alike.
package budget
