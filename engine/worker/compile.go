package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
)

// tenantTemplates is the turn that compiles take among the tenants'
// renders.
const tenantTemplates = "\x00templates"

// Compile compiles package name of the resolved templates directory root
// in a worker, within b scaled as a compile's budget is. A compile that
// overruns, runs out of its budget or crashes its worker is an error: the
// package must not be compiled in the operator. Otherwise (compiled, or an
// ordinary error that the operator's own compile reports the same way)
// the package may be compiled; check then says whether the operator
// compiled the revision the worker did. The worker keeps the kind for the
// renders that follow.
func (p *Pool) Compile(ctx context.Context, root, name string, b budget.Budget) (check func(*template.Kind) error, err error) {
	req := &request{Op: opCompile, Root: root, Kind: name, Options: wireOptions{Budget: b, Limits: p.opts.Limits}}
	cb := b.Scale(template.CompileBudgetFactor)
	for attempt := 0; ; attempt++ {
		resp, u, err := p.run(ctx, tenantTemplates, req, cb)
		if err != nil {
			return nil, err
		}
		switch {
		case resp == nil && u.limit == "" && u.crashed == "exited" && attempt == 0:
			continue // ended from outside: once more on a fresh worker
		case resp == nil:
			return nil, errors.New(describe("compile", u, cb, p.opts.Memory))
		case resp.Err != nil && resp.Abandoned:
			return nil, resp.Err.err()
		case resp.Err != nil || resp.Revision == "":
			return nil, nil
		}
		return func(k *template.Kind) error {
			if k.Revision != resp.Revision {
				return fmt.Errorf("changed while it was compiled (a worker compiled revision %s, the operator %s): the next reload compiles it again", resp.Revision, k.Revision)
			}
			return nil
		}, nil
	}
}

// CanStart tells whether a pool with opts can start its workers: the
// default command needs this program to serve as one (Main).
func CanStart(opts Options) error {
	if opts.Command != nil {
		return nil
	}
	_, err := selfCommand()
	return err
}
