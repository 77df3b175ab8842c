// Package render is the pure heart of cueop: a compiled Kind, a custom
// resource (the parent) and the live children observed for it go in; the
// child objects the parent should own, its status and whether it is ready
// come out. No client, no clock: `cueop render`, `cueop test` and the
// controller all call Render, so the offline output is exactly what the
// controller applies.
//
// The engine, not the template, sets on every child the parent's namespace,
// the controller owner reference and the management labels, and refuses a
// child in another namespace, of a cluster-scoped kind or of a kind outside
// the administrator's allow-list.
//
// A template may read objects it does not own: References evaluates what it
// references from the parent alone, Resolve matches them against objects of
// the parent's namespace, and RenderInputs renders with them (Inputs holds
// every input of a render beside the parent: observed children and
// referenced objects). Waves and readyWhen give each child its wave and
// readiness; the reconciler applies and deletes by them. A template's own
// conditions come out as Result.Conditions, for the reconciler to merge
// into status.conditions.
//
// One file per job, each headed by what it does and must not do:
//
//	inputs.go      what goes into an evaluation and where it runs: Inputs
//	               and their Digest, Reuse, the Evaluator, Render and
//	               RenderInputs within the budget, Packed
//	render.go      the render itself: Options, Result, Child; the template
//	               filled and its children exported and checked
//	results.go     what the engine asks of a Result: waves and readiness,
//	               policies and data kinds, conditions, immutable values,
//	               absent reads and gate warnings
//	references.go  the objects a template reads but does not own
//	errors.go      how a render that cannot be applied reads: Error and the
//	               wording of CUE's errors
//
// It must not read a cluster, a clock or the environment, and nothing one
// render does may change what another returns.
package render
