// Package localcluster runs a real, local Kubernetes control plane for tests and
// for `cueop dev`.
//
// Start launches, as child processes listening on free ports of 127.0.0.1 only:
//
//   - etcd,
//   - kube-apiserver (service CIDR 10.96.0.0/16, RBAC, an admin client certificate
//     in the system:masters group, optionally an audit log),
//
// and, unless Options.ControlPlaneOnly is set,
//
//   - kube-controller-manager (garbage collection, namespace deletion,
//     EndpointSlices, service accounts, ...),
//   - kube-scheduler,
//   - kwok, which plays the kubelet of fake nodes: pods bound to them turn Running
//     and Ready within a second or two, without any container running.
//
// Start then creates Options.Nodes fake nodes and returns once every component is
// healthy and every node is Ready. It also provisions storage (storage.go): a
// default StorageClass "standard" (WaitForFirstConsumer) and "immediate", and a
// provisioner in the calling process that binds each of their claims to a
// hostPath PersistentVolume of its own (on the node of its first Pod in the
// first mode) and deletes the volume with its claim. The Cluster gives a *rest.Config for the admin
// user and a kubeconfig file (Cluster.KubeconfigPath) for kubectl. Each process logs
// to Cluster.LogDir/<component>.log.
//
// The binaries are not downloaded: `make k8s-bins` (hack/k8s/build.sh) builds them
// from pinned Go modules into a cache directory keyed by their versions; see
// DefaultBinDir.
//
// Cluster.Stop ends every process (SIGTERM to its process group, SIGKILL after a
// grace period) and removes the cluster's directory. The children are also started
// with a parent-death signal (SIGKILL), so they do not outlive a test binary that
// crashes or is killed before it could call Stop. (Linux sends that signal when the
// OS thread that started the child exits; the Go runtime keeps its threads, unless
// a goroutine that locked its thread ends without unlocking it.)
//
// Package clustertest wraps this for tests: one cluster per test binary, started in
// TestMain, and a fresh namespace per test.
package localcluster
