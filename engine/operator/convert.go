package operator

import (
	"context"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/engine/worker"
)

// converterWithin makes a kind's converter from its CUE conversions
// (engine/convert), each conversion evaluated within b; none for a kind
// with one version.
func converterWithin(b budget.Budget) func(*template.Kind) (webhook.Converter, error) {
	return func(k *template.Kind) (webhook.Converter, error) {
		c, err := convert.New(k)
		if err != nil || c == nil {
			return nil, err
		}
		return c.WithBudget(b).Lenient(), nil
	}
}

// inWorkers makes the converters, unless c makes its own (Conversion.New),
// convert in pool's workers (engine/worker), each conversion within b:
// where the renders evaluate, isolated alike; so do the round trips a new
// revision is checked with (checkRoundTrips).
func (c *conversions) inWorkers(conf *Conversion, pool *worker.Pool, b budget.Budget) {
	if c == nil || conf == nil || conf.New != nil {
		return
	}
	c.checkIn = func(ctx context.Context, k *template.Kind, specs []convert.Spec) error {
		return pool.CheckConversions(ctx, k, specs, b)
	}
	c.make = func(k *template.Kind) (webhook.Converter, error) {
		conv, err := pool.Converter(k, b)
		if err != nil || conv == nil {
			return nil, err
		}
		return conv, nil
	}
}
