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
package render
