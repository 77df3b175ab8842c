package main

import (
	"context"

	"github.com/cueop/cueop/localcluster"
)

// startCluster starts a local control plane with opts, the scheduler and
// the controller-manager at 1000 QPS (their client-side limits, 50 and 20
// QPS, would bound every operator alike and hide the differences), makes
// it d's and builds d's clients. stop stops it; it is never nil.
func (d *driver) startCluster(ctx context.Context, opts localcluster.Options) (stop func(), err error) {
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
	d.cluster = c
	stop = func() {
		if err := c.Stop(); err != nil {
			d.logf("stop control plane: %v", err)
		}
	}
	if err := d.clients(); err != nil {
		stop()
		return func() {}, err
	}
	return stop, nil
}
