package operator

import (
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// warnTemplate logs, once per revision served, what render.LoadWarnings
// finds in k: reads of its status, conditions, ready or readyWhen of a
// field the child's kind does not have, which never find a value.
func (o *Operator) warnTemplate(k *template.Kind) {
	for _, w := range render.LoadWarnings(k) {
		o.log.Info("template warning", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision, "warning", w)
	}
}
