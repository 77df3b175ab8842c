package localcluster

import "time"

// Component names. They name each process's log file (LogDir/<name>.log), its
// binary and its key in Options.ExtraArgs.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// ServiceCIDR is the range Services get their cluster IPs from: a /16 holds
// about 65,000 Services.
const ServiceCIDR = "10.96.0.0/16"

// Defaults applied by Start to zero Options fields.
const (
	DefaultNodes        = 3
	DefaultStartTimeout = 2 * time.Minute
	DefaultStopGrace    = 5 * time.Second
)

// Options configure Start. The zero value starts all five components with
// DefaultNodes fake nodes.
type Options struct {
	// BinDir holds the binaries. Empty means $CUEOP_K8S_BIN_DIR, or else
	// DefaultBinDir().
	BinDir string

	// ControlPlaneOnly starts only etcd and kube-apiserver (like envtest): no
	// garbage collection, no scheduling, no fake nodes.
	ControlPlaneOnly bool

	// Nodes is the number of fake kwok nodes to create; 0 means DefaultNodes.
	// Ignored with ControlPlaneOnly.
	Nodes int

	// AuditLog makes kube-apiserver write every request, at level Metadata, as
	// JSON lines to LogDir/audit.log (see Cluster.AuditLogPath).
	AuditLog bool

	// FeatureGates are set on kube-apiserver (--feature-gates), by gate name:
	// for example {"ShardedListAndWatch": true} for the sharded list and
	// watch (KEP-5866) cueop's --shards needs. Nil leaves the defaults.
	FeatureGates map[string]bool

	// ExtraArgs are appended to the command line of the component they are keyed
	// by (a component name, e.g. KubeAPIServer). A later flag wins over the
	// default one.
	ExtraArgs map[string][]string

	// TempDir is where the cluster's directory is created; empty means
	// os.TempDir().
	TempDir string

	// KeepDir keeps the cluster's directory (data, certificates, logs) after Stop.
	KeepDir bool

	// StartTimeout bounds how long Start waits for the cluster to become ready;
	// 0 means DefaultStartTimeout.
	StartTimeout time.Duration

	// StopGrace is how long Stop waits after SIGTERM before it sends SIGKILL;
	// 0 means DefaultStopGrace.
	StopGrace time.Duration
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = DefaultNodes
	}
	if o.ControlPlaneOnly {
		o.Nodes = 0
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o
}

// components lists the processes Options start, in start order.
func (o Options) components() []string {
	if o.ControlPlaneOnly {
		return []string{Etcd, KubeAPIServer}
	}
	return []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}
}
