package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cueop/cueop/engine/worker"
)

// newWorker is the hidden `cueop worker`: the process `cueop run` starts
// to evaluate renders and compiles in (engine/worker). The operator starts
// it with its limits in the environment (main calls worker.Main first);
// run by hand it serves requests on stdin without a memory limit.
func newWorker() *cobra.Command {
	return &cobra.Command{
		Use: "worker", Short: "Serve renders on stdin and stdout (started by cueop run)", Hidden: true,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			os.Exit(worker.Serve(os.Stdin, os.Stdout, 0))
			return nil
		},
	}
}

// workerFlags are where cueop run and cueop dev evaluate: the worker pool.
type workerFlags struct {
	workers   int
	memoryMiB int64
	isolation string
}

func (f *workerFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&f.workers, "render-workers", worker.DefaultWorkers,
		"worker processes that evaluate renders and compiles, started on demand")
	fl.Int64Var(&f.memoryMiB, "render-worker-memory", worker.DefaultMemory>>20,
		"MiB of memory each render worker may use (address space above its start, and resident); a worker over it is killed and replaced; 0 or less: no limit")
	fl.StringVar(&f.isolation, "render-isolation", "process",
		"where renders and compiles run: process (killable workers) or inprocess (in the operator itself, for trusted templates and benchmarks only: one evaluation can take the operator down)")
}

// options are the worker pool options; inProcess is true for
// --render-isolation=inprocess.
func (f *workerFlags) options() (opts worker.Options, inProcess bool, err error) {
	switch f.isolation {
	case "process", "":
	case "inprocess":
		inProcess = true
	default:
		return opts, false, fmt.Errorf("--render-isolation: %q is neither process nor inprocess", f.isolation)
	}
	opts = worker.Options{Workers: f.workers, Memory: f.memoryMiB << 20}
	if f.memoryMiB <= 0 {
		opts.Memory = -1
	}
	return opts, inProcess, nil
}
