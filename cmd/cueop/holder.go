package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/wellknown"
)

// holderFlags say which operator instance cueop run is, recorded on the
// CRDs of the kinds it holds, and which kinds it takes over
// (engine/operator/holder.go).
type holderFlags struct {
	instance string
	takeOver []string
}

func (f *holderFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.instance, "instance", runIdentityNamespace()+"/cueop",
		"name of this operator instance, recorded on the CRDs of the kinds it holds (annotation "+wellknown.AnnotationOperator+"); every replica and shard of one install the same, each install its own (default: <the pod's namespace>/cueop)")
	fl.StringArrayVar(&f.takeOver, "take-over", nil,
		"Kind.group (or CRD name) of a kind to take over from the operator instance its CRD names, as when moving an install; repeatable")
}

// options sets the instance options of opts.
func (f *holderFlags) options(opts *operator.Options) error {
	if strings.TrimSpace(f.instance) == "" {
		return fmt.Errorf("--instance: empty")
	}
	for _, k := range f.takeOver {
		if !strings.Contains(k, ".") {
			return fmt.Errorf("--take-over %q: want Kind.group (RedisCluster.cache.example.com) or a CRD name (redisclusters.cache.example.com)", k)
		}
	}
	opts.Instance, opts.TakeOver = f.instance, f.takeOver
	return nil
}
