package main

import (
	"context"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/localcluster"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// lab is the control plane a bench runs on, its clients and what the bench
// does there: the CRDs it installs (crd, the RedisCluster CRD installed
// last: each operator started sets its conversion, operators.startOperator),
// the namespaces and CRs it creates and deletes, and its watches of them.
type lab struct {
	*session
	cluster *localcluster.Cluster
	rest    *rest.Config
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	meta    metadata.Interface
	crd     string
}

// startCluster starts a local control plane with opts, the scheduler and
// the controller-manager at 1000 QPS (their client-side limits, 50 and 20
// QPS, would bound every operator alike and hide the differences), makes
// it l's and builds l's clients. stop stops it; it is never nil.
func (l *lab) startCluster(ctx context.Context, opts localcluster.Options) (stop func(), err error) {
	qps := []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	if opts.ExtraArgs == nil {
		opts.ExtraArgs = map[string][]string{}
	}
	for _, c := range []string{localcluster.KubeScheduler, localcluster.KubeControllerManager} {
		opts.ExtraArgs[c] = append(qps, opts.ExtraArgs[c]...)
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return func() {}, err
	}
	l.cluster = c
	stop = func() {
		if err := c.Stop(); err != nil {
			l.logf("stop control plane: %v", err)
		}
	}
	if err := l.clients(); err != nil {
		stop()
		return func() {}, err
	}
	return stop, nil
}

func (l *lab) clients() error {
	l.rest = rest.CopyConfig(l.cluster.Config)
	l.rest.QPS, l.rest.Burst = 1000, 2000
	var err error
	if l.cs, err = kubernetes.NewForConfig(l.rest); err != nil {
		return err
	}
	if l.dyn, err = dynamic.NewForConfig(l.rest); err != nil {
		return err
	}
	l.meta, err = metadata.NewForConfig(l.rest)
	return err
}

// installCRD applies the RedisCluster CRD of the templates directory tmpl,
// with the conversion webhook cueop installs it with, and remembers it.
func (l *lab) installCRD(ctx context.Context, tmpl string) error {
	name, err := harness.CRDName(tmpl)
	if err != nil {
		return err
	}
	if err := harness.InstallCRD(ctx, l.rest, tmpl); err != nil {
		return err
	}
	l.crd = name
	return nil
}
