package localcluster

import (
	_ "embed"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// stages are kwok's Stage objects: how fake nodes and their pods change state.
//
//go:embed stages.yaml
var stages []byte

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// ports are the 127.0.0.1 ports the components listen on.
type ports struct {
	etcd, etcdPeer, apiserver, controllerManager, scheduler, kwok int
}

// files are the paths of the files the components read or write.
type files struct {
	caCert, apiserverCert, apiserverKey, saKey, saPub string
	kubeconfig                                        map[string]string // by user
	stages, auditPolicy, auditLog                     string
}

// setup allocates ports, writes certificates, kubeconfigs and configuration
// files, and defines the processes.
func (c *Cluster) setup(bins map[string]string) error {
	c.LogDir = filepath.Join(c.Dir, "logs")
	for _, d := range []string{c.LogDir, c.path("pki"), c.path("etcd")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	p, err := freePorts(6)
	if err != nil {
		return fmt.Errorf("free ports: %w", err)
	}
	c.ports = ports{p[0], p[1], p[2], p[3], p[4], p[5]}
	if err := c.writePKI(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := c.writeConfigFiles(); err != nil {
		return err
	}
	for _, name := range c.opts.components() {
		c.procs = append(c.procs, &process{
			name:    name,
			path:    bins[name],
			args:    append(c.args(name), c.opts.ExtraArgs[name]...),
			logPath: filepath.Join(c.LogDir, name+".log"),
		})
	}
	return nil
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

// freePorts returns n distinct free ports of 127.0.0.1. They are held open
// together, so they differ, and closed before they are returned.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeConfigFiles writes kwok's stages and the audit policy.
func (c *Cluster) writeConfigFiles() error {
	c.files.stages = c.path("stages.yaml")
	c.files.auditPolicy = c.path("audit-policy.yaml")
	c.files.auditLog = filepath.Join(c.LogDir, "audit.log")
	if err := os.WriteFile(c.files.stages, stages, 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.files.auditPolicy, []byte(auditPolicy), 0o644)
}
