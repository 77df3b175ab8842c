// Package faults proves on a real local control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok) that cueop survives
// faults and refuses bad input: the API server stopped, the operator
// SIGKILLed, watches expired, fields taken by other managers, concurrent
// status writers, failing applies, and broken templates and specs, each
// with CRs converging meanwhile. docs/reliability.md lists every case with
// the guarantee and the test that proves it.
//
//	go test -race -count=1 ./faults/
package faults
