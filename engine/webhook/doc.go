// Package webhook is the conversion endpoint cueop serves for kinds with
// several versions: a ConversionReview handler (handler.go), bounded in
// body, objects, time and concurrency (limits.go), over the
// converters of each kind's last good revision, looked up by group and
// kind in a Registry (registry.go) that a reconcile never locks; the
// serving certificates (certs.go: a CA and a serving certificate made in
// memory, secret.go: kept and rotated in a Secret in a cluster); and the
// CRD's conversion clientConfig pointed at the endpoint (endpoint.go).
//
// It must not convert by itself (the converters of package convert do, in
// workers) nor decide which revision's conversions serve (package
// operator).
package webhook
