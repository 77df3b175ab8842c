// Package wellknown names, once, what cueop writes on the cluster for
// others to read: the labels, annotations and finalizers it puts on CRDs,
// CRs, children and Leases (labels.go), and the condition types and
// reasons of the CR's status (conditions.go), of a Template object's
// status (template.go) and of a kind's CRD (crd.go), Event reasons
// included.
//
// It holds constants only and imports nothing of cueop, so that every
// package can use it. It must not hold logic: what a name means to the
// engine stays with the package that acts on it, whose doc comments say
// so.
package wellknown
