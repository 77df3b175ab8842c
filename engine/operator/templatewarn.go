package operator

import (
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// warn logs, once per revision served, what render.LoadWarnings finds in
// k: reads of its status, conditions, ready or readyWhen of a field the
// child's kind does not have, which never find a value. A sharded replica
// runs an Operator per range it holds: the one of range 0 speaks for them
// all, as the warnings are the template's, not a range's.
func (r *kindReports) warn(k *template.Kind) {
	if !r.speaks {
		return
	}
	for _, w := range render.LoadWarnings(k) {
		r.log.Info("template warning", "kind", k.Resource.Kind, "package", k.Name, "revision", k.Revision, "warning", w)
	}
}
