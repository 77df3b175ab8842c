package main

import (
	"flag"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// addServeCommands adds the commands that talk to a cluster.
func addServeCommands(root *cobra.Command, g *globals) {
	zapOpts := &zap.Options{Development: false}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(fs)
	root.PersistentFlags().AddGoFlagSet(fs)
	root.AddCommand(newRun(g, zapOpts), newDev(g, zapOpts))
}
