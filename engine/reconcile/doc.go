// Package reconcile is cueop's one generic reconciler. For one custom
// resource it runs the stages of the pipeline in order:
//
//	observe  list the children the CR owns from the informer cache
//	render   the current template over the CR and the observed children
//	apply    server-side apply each child that would change (none otherwise)
//	prune    delete owned children the render no longer has, only after
//	         every apply succeeded
//	status   the template's status plus observedGeneration, the template
//	         revision and the kstatus conditions Ready, Reconciling and
//	         Stalled, written once and only when it changed
//
// A render error (a spec breaking a CUE constraint, a refused child) sets
// Stalled and changes no child. A converged CR costs no API request.
package reconcile
