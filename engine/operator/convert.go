package operator

import (
	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
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
