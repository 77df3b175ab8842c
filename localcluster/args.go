package localcluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// args returns the command line flags of the named component.
func (c *Cluster) args(name string) []string {
	switch name {
	case Etcd:
		return c.etcdArgs()
	case KubeAPIServer:
		return c.apiserverArgs()
	case KubeControllerManager:
		return c.controllerManagerArgs()
	case KubeScheduler:
		return c.schedulerArgs()
	case Kwok:
		return c.kwokArgs()
	}
	panic("localcluster: unknown component " + name)
}

func localURL(scheme string, port int) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
}

func (c *Cluster) etcdArgs() []string {
	client, peer := localURL("http", c.ports.etcd), localURL("http", c.ports.etcdPeer)
	return []string{
		"--name=localcluster",
		"--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=localcluster=" + peer,
		"--unsafe-no-fsync",
	}
}

func (c *Cluster) apiserverArgs() []string {
	args := []string{
		"--etcd-servers=" + localURL("http", c.ports.etcd),
		"--bind-address=127.0.0.1",
		// The endpoint reconciler refuses a loopback address, and nothing here
		// reaches the apiserver through the kubernetes Service anyway.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(c.ports.apiserver),
		"--tls-cert-file=" + c.files.apiserverCert,
		"--tls-private-key-file=" + c.files.apiserverKey,
		"--client-ca-file=" + c.files.caCert,
		"--authorization-mode=RBAC,Node",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.files.saPub,
		"--service-account-signing-key-file=" + c.files.saKey,
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--allow-privileged=true",
		// No request queuing by priority: predictable latency for tests.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
	if c.opts.ControlPlaneOnly {
		// Nothing creates service accounts without the controller-manager, so the
		// ServiceAccount admission plugin would reject every Pod.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	if c.opts.AuditLog {
		args = append(args,
			"--audit-policy-file="+c.files.auditPolicy,
			"--audit-log-path="+c.files.auditLog,
			"--audit-log-format=json",
		)
	}
	if gates := featureGates(c.opts.FeatureGates); gates != "" {
		args = append(args, "--feature-gates="+gates)
	}
	return args
}

// featureGates is the value of --feature-gates for gates: Name=bool pairs in
// name order, "" when there are none.
func featureGates(gates map[string]bool) string {
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, name := range names {
		pairs[i] = name + "=" + strconv.FormatBool(gates[name])
	}
	return strings.Join(pairs, ",")
}

// componentArgs are the flags kube-controller-manager and kube-scheduler share.
func (c *Cluster) componentArgs(name string, port int) []string {
	kubeconfig := c.files.kubeconfig[name]
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + c.path(name+"-certs"),
	}
}

func (c *Cluster) controllerManagerArgs() []string {
	return append(c.componentArgs(KubeControllerManager, c.ports.controllerManager),
		"--controllers=*,-serviceaccount-token-controller",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+c.files.saKey,
		"--root-ca-file="+c.files.caCert,
	)
}

func (c *Cluster) schedulerArgs() []string {
	return c.componentArgs(KubeScheduler, c.ports.scheduler)
}

func (c *Cluster) kwokArgs() []string {
	return []string{
		"--kubeconfig=" + c.files.kubeconfig[Kwok],
		"--manage-nodes-with-annotation-selector=" + nodeAnnotation + "=fake",
		"--server-address=127.0.0.1:" + strconv.Itoa(c.ports.kwok),
		"--config=" + c.files.stages,
		// Renew each node's Lease, so that the node lifecycle controller never
		// marks a fake node unhealthy (and its pods not ready).
		"--node-lease-duration-seconds=40",
	}
}
