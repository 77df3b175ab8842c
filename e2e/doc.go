// Package e2e tests the deployment of cueop to a real cluster: the
// kustomize tree in config/ builds and is accepted by a real API server, the
// templates ConfigMap recreates the templates directory, and the generated
// RBAC is enough for the controller, running as its ServiceAccount, to
// serve the samples, while it still cannot touch Secrets or RBAC.
//
// The tests run against one local control plane per test binary (package
// localcluster); `make k8s-bins` builds its binaries.
package e2e
