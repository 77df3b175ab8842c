// Package testkit is the setup that tests of every package share and that
// needs no cluster: templates directories written from a map of files (with
// the module.cue of a test module), the project's own templates copied for a
// test to edit, and a RoundTripper that records the requests of a client.
// The helpers that need a control plane (a namespace, kubectl, waiting) are
// in localcluster/clustertest; those that run an operator in
// engine/operator/operatortest.
//
// It imports nothing of the engine, so that the internal tests of any
// package may use it.
package testkit
