package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/cueop/cueop/engine/budget"
)

// budgetFlags are the render budget, shared by every command that
// evaluates templates (run, dev, render, vet, test, crd, manifests).
type budgetFlags struct {
	time         time.Duration
	memoryMiB    int64
	maxAbandoned int
}

func (f *budgetFlags) register(fl *pflag.FlagSet) {
	fl.DurationVar(&f.time, "render-cpu", budget.DefaultTime,
		"CPU time one render may use, and 10 times it of wall-clock time (compiling a kind: 4 times as much); 0 or less: no limit")
	fl.Int64Var(&f.memoryMiB, "render-memory", budget.DefaultMemory>>20,
		"MiB one render may allocate (compiling a kind: 4 times as much); 0 or less: no limit")
	fl.IntVar(&f.maxAbandoned, "render-max-abandoned", budget.DefaultMaxAbandoned,
		"renders of one kind that ran out of budget and still run (CUE cannot stop them) before renders of that kind are refused")
}

func (f *budgetFlags) budget() budget.Budget {
	b := budget.Budget{Time: f.time, Memory: f.memoryMiB << 20, MaxAbandoned: f.maxAbandoned}
	if b.Time <= 0 {
		b.Time = -1
	}
	if b.Memory <= 0 {
		b.Memory = -1
	}
	if b.MaxAbandoned <= 0 {
		b.MaxAbandoned = budget.DefaultMaxAbandoned
	}
	return b
}
