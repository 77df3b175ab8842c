package main

import (
	"flag"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newServeCommands are the commands that run the operator, run and dev,
// with controller-runtime's logging flags.
func newServeCommands(g *globals) (run, dev *cobra.Command) {
	zapOpts := &zap.Options{Development: false}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(fs)
	run, dev = newRun(g, zapOpts), newDev(g, zapOpts)
	run.Flags().AddGoFlagSet(fs)
	dev.Flags().AddGoFlagSet(fs)
	return run, dev
}
