package reconcile

import (
	"strings"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// ReasonReadsAbsentField is the reason of Ready=False when what Ready
// depends on (the template's ready, else its readyWhen) reads a field that
// the rendered child's kind does not have: it never finds a value, so the
// CR may never be Ready whatever its children do.
const ReasonReadsAbsentField = "ReadsAbsentField"

// notReady is the reason and message of Ready=False for a rendered CR:
// the absent reads Ready depends on (render.ReadyAbsent), else
// ChildrenNotReady.
func (r *run) notReady() (reason, message string) {
	absent := render.ReadyAbsent(r.kind, r.result_.Children)
	if len(absent) == 0 {
		return ReasonChildrenNotReady, "waiting for children to be ready"
	}
	msgs := make([]string, len(absent))
	for i, a := range absent {
		msgs[i] = a.Sentence() + " (" + template.ShortPos(a.Pos) + ")"
	}
	return ReasonReadsAbsentField, strings.Join(msgs, "; ") + ": it never finds a value"
}
