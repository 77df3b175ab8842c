package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cueop/cueop/engine/template"
)

// limitFlags bound the files a load reads, shared by every command that
// loads templates.
type limitFlags struct {
	file, total byteSize
}

func (f *limitFlags) register(fl *pflag.FlagSet) {
	f.file, f.total = template.DefaultMaxFileSize, template.DefaultMaxTotalSize
	fl.Var(&f.file, "template-max-file-size",
		"the most bytes one template file (a .cue file, an @embed file) may hold, as a quantity (1Mi, 500Ki, 2000000)")
	fl.Var(&f.total, "template-max-total-size",
		"the most bytes the files of one kind (its package, what it embeds, the helper packages it imports) may hold together")
}

func (f *limitFlags) limits() template.Limits {
	return template.Limits{MaxFileSize: int64(f.file), MaxTotalSize: int64(f.total)}
}

// byteSize is a flag of bytes written as a Kubernetes quantity.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%s: want a positive number of bytes", s)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "bytes" }
