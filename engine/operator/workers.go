package operator

import (
	"context"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker"
)

// startWorkers sets up where the evaluations run, the conversions'
// included: a pool of worker processes, started on demand, unless the
// options say in process.
func (o *Operator) startWorkers() error {
	if o.opts.InProcess {
		o.eval = render.InProcess{}
		return nil
	}
	if err := worker.CanStart(o.opts.Workers); err != nil {
		return err
	}
	wopts := o.opts.Workers
	wopts.Limits = o.opts.TemplateLimits
	o.pool = worker.New(wopts)
	o.eval = o.pool
	o.conv.inWorkers(o.opts.Conversion, o.pool, o.opts.Budget) // convert.go
	return nil
}

func (o *Operator) stopWorkers() {
	if o.pool != nil {
		o.pool.Close()
	}
}

// loadTemplates loads and compiles every kind of the templates directory
// with loadOptions.
func (o *Operator) loadTemplates(ctx context.Context) (*template.Set, error) {
	return template.LoadWith(o.opts.Templates, o.loadOptions(ctx))
}

// loadOptions compile each package in a worker first: only what a worker
// compiled within the budget is compiled again in the operator, so that a
// template that would crash or hang the compile ends a worker, not the
// operator, and its kind keeps serving its last good revision. They tell
// the load who holds each kind's claims (claims.go).
func (o *Operator) loadOptions(ctx context.Context) template.LoadOptions {
	opts := template.LoadOptions{Budget: o.opts.Budget, Limits: o.opts.TemplateLimits, Holders: o.holders(ctx)}
	if o.pool != nil {
		opts.Admit = func(root, name string) (func(*template.Kind) error, error) {
			return o.pool.Compile(ctx, root, name, o.opts.Budget)
		}
	}
	return opts
}
