// Package operator wires cueop into a controller-runtime manager: one
// controller per kind of the templates directory, all running the generic
// reconciler, and a watch on the templates directory that swaps a kind's
// template in place when it changes (hot reload), starts a controller for a
// new kind and stops the controller of a removed one. With InstallCRDs, a
// kind's CRD is applied first, unless it breaks the schema of a kind with
// stored CRs (schemaguard): then the new revision is refused, reported as a
// template error, and the last good one keeps serving. Every replica,
// leader or not, serves the conversion webhook of the kinds with several
// versions with the last good revision's conversions (conversion.go).
//
// Three caches serve the reconcilers. The CRs are read from an unfiltered
// cache of their own; children are read from the manager's cache, which
// holds only objects labelled app.kubernetes.io/managed-by=cueop, so memory
// does not grow with unrelated objects in the cluster; the kinds templates
// reference are cached by their metadata only, and the few objects a render
// needs are read whole (references.go, refobjects.go).
package operator
