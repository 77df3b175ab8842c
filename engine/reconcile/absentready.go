package reconcile

import (
	"strings"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// ReasonReadsAbsentField is the reason of Ready=False when what Ready
// depends on (the template's ready, else its readyWhen) reads a field that
// the rendered child's kind does not have, and nothing else keeps the CR
// from Ready: the child read exists and every child is otherwise ready
// (render.AbsentMayBlock). The read never finds a value, so the CR may never
// be Ready whatever its children do.
const ReasonReadsAbsentField = "ReadsAbsentField"

// notReady is the reason and message of Ready=False for a rendered CR:
// ReasonReadsAbsentField naming the absent reads Ready depends on
// (render.ReadyAbsent) when they may be what blocks it, else
// ChildrenNotReady, with those reads, if any, named in a note.
func (r *run) notReady() (reason, message string) {
	const waiting = "waiting for children to be ready"
	absent := render.ReadyAbsent(r.kind, r.result_.Children, r.result_.ReadyByDefault)
	if len(absent) == 0 {
		return ReasonChildrenNotReady, waiting
	}
	msgs := make([]string, len(absent))
	for i, a := range absent {
		msgs[i] = a.Sentence() + " (" + template.ShortPos(a.Pos) + ")"
	}
	if !render.AbsentMayBlock(absent, r.result_.Children, r.wholeObserved()) {
		return ReasonChildrenNotReady, waiting + "; note: " + strings.Join(msgs, "; ")
	}
	return ReasonReadsAbsentField, strings.Join(msgs, "; ") + ": it never finds a value"
}
