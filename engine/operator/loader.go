package operator

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/engine/worker"
)

// templateLoader loads the templates directory and owns where evaluations
// run: a pool of worker processes, started on demand, unless the options
// say in process. Its one job is to turn the directory into a
// template.Set; it serves nothing.
type templateLoader struct {
	dir    string
	budget budget.Budget
	limits template.Limits
	log    logr.Logger
	// reader reads the CRDs a claim is decided by (holders); nil reads none.
	reader client.Reader
	// served are the kinds served now, by package (kindLifecycle.holdings);
	// nil: none.
	served func() []template.Holding

	eval render.Evaluator
	pool *worker.Pool // nil in process
}

// newTemplateLoader sets up where the evaluations run, the conversions'
// included (conv, when set, converts in the same pool).
func newTemplateLoader(opts Options, log logr.Logger, reader client.Reader, conv *conversions) (*templateLoader, error) {
	l := &templateLoader{dir: opts.Templates, budget: opts.Budget, limits: opts.TemplateLimits, log: log, reader: reader}
	if opts.InProcess {
		l.eval = render.InProcess{}
		return l, nil
	}
	if err := worker.CanStart(opts.Workers); err != nil {
		return nil, err
	}
	wopts := opts.Workers
	wopts.Limits = opts.TemplateLimits
	l.pool = worker.New(wopts)
	l.eval = l.pool
	conv.inWorkers(opts.Conversion, l.pool, opts.Budget) // convert.go
	return l, nil
}

// stop ends the worker processes, if any.
func (l *templateLoader) stop() {
	if l != nil && l.pool != nil {
		l.pool.Close()
	}
}

// load loads and compiles every kind of the templates directory with
// options.
func (l *templateLoader) load(ctx context.Context) (*template.Set, error) {
	return template.LoadWith(l.dir, l.options(ctx))
}

// options compile each package in a worker first: only what a worker
// compiled within the budget is compiled again in the operator, so that a
// template that would crash or hang the compile ends a worker, not the
// operator, and its kind keeps serving its last good revision. They tell
// the load who holds each kind's claims (holders).
func (l *templateLoader) options(ctx context.Context) template.LoadOptions {
	opts := template.LoadOptions{Budget: l.budget, Limits: l.limits, Holders: l.holders(ctx)}
	if l.pool != nil {
		opts.Admit = func(root, name string) (func(*template.Kind) error, error) {
			return l.pool.Compile(ctx, root, name, l.budget)
		}
	}
	return opts
}

// holders answers a load who holds a kind's claims already: the kinds
// this operator serves, then the CRD in the cluster (its kind and the
// package it was applied for). A kind served by its own package under
// the same identity asks the API server nothing.
func (l *templateLoader) holders(ctx context.Context) template.Holders {
	var served []template.Holding
	if l.served != nil {
		served = l.served()
	}
	return func(kindID, crdName string) []template.Holding {
		var out []template.Holding
		own := false
		for _, h := range served {
			if h.Kind == kindID || h.CRD == crdName {
				out = append(out, h)
				own = own || (h.Kind == kindID && h.CRD == crdName)
			}
		}
		if own || l.reader == nil {
			return out
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := l.reader.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			if !apierrors.IsNotFound(err) {
				l.log.Error(err, "templates: could not read the CRD to tell who holds it; a claim it would decide refuses every claimant", "crd", crdName)
			}
			return out
		}
		return append(out, template.Holding{
			Package: crd.Annotations[wellknown.AnnotationPackage],
			Kind:    crd.Spec.Names.Kind + "." + crd.Spec.Group,
			CRD:     crdName,
		})
	}
}
