// Package worker runs CUE evaluations (renders, evaluations of references,
// compiles) in worker processes that the operator can kill.
//
// CUE cannot stop an evaluation, and one that asks for a terabyte at once
// ends a Go process with a fatal "out of memory" that no recover catches.
// So the operator evaluates nothing itself: a Pool starts its own
// executable again as a worker (Main, called first in main and in the
// TestMain of every test binary that runs an operator, serves in a process
// started so), on demand, and sends it one request at a time as a
// length-prefixed JSON message on its stdin; the answer comes back on its
// stdout. A worker compiles a kind once from the templates directory the
// operator loaded it from and keeps it for the renders that follow; when
// the directory holds another revision than the operator's (an edit the
// operator refused), the worker says so and is sent the revision's own
// files (template.Kind.Files), so that the last good revision keeps
// rendering.
//
// Each worker limits its own address space (RLIMIT_AS, above what it maps
// at start) and runs each evaluation within its budget (package budget,
// exact there since the worker evaluates one thing at a time); the pool
// reads the worker's CPU time and resident memory from /proc while it
// evaluates and kills it past its limits. An evaluation that runs out of
// its budget, overruns, or crashes its worker ends that worker: the answer
// is a render.Error with reason RenderBudget naming what the evaluation
// used, and the next request gets a fresh worker. A worker that ends with
// no fatal error of its own is not charged: the request is tried once more.
//
// Workers are shared fairly between tenants (a CR's namespace; compiles
// are one more): one tenant holds at most Workers-1 of them, waiting
// requests are served round robin by tenant, a tenant whose share is held
// by evaluations that have run for a while is refused at once (Busy) so
// that its caller retries later instead of holding a reconcile slot, and a
// new worker starts when every running one has been busy for SpawnAfter.
//
// Compile, through template.LoadOptions.Admit, compiles every package in a
// worker before the operator compiles it: a package that crashes or
// overruns a worker is refused, never compiled in the operator.
//
// It must not decide what is evaluated nor what a result means: it runs the
// evaluations of render, template and convert out of process and hands
// their results back as they are.
package worker
