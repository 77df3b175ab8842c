package operator

import (
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
)

// defaultConverter is a kind's converter: none until engine/convert lands.
func defaultConverter(*template.Kind) (webhook.Converter, error) { return nil, nil }
