package reconcile

import (
	"strings"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// notReady is the reason and message of Ready=False for a rendered CR:
// wellknown.ReasonReadsAbsentField naming the absent reads Ready depends on
// (render.ReadyAbsent) when they may be what blocks it, else
// ChildrenNotReady, with those reads, if any, named in a note.
func (r *run) notReady() (reason, message string) {
	const waiting = "waiting for children to be ready"
	absent := render.ReadyAbsent(r.kind, r.res.Children, r.res.ReadyByDefault)
	if len(absent) == 0 {
		return wellknown.ReasonChildrenNotReady, waiting
	}
	msgs := make([]string, len(absent))
	for i, a := range absent {
		msgs[i] = a.Sentence() + " (" + template.ShortPos(a.Pos) + ")"
	}
	if !render.AbsentMayBlock(absent, r.res.Children, r.v.wholeObserved()) {
		return wellknown.ReasonChildrenNotReady, waiting + "; note: " + strings.Join(msgs, "; ")
	}
	return wellknown.ReasonReadsAbsentField, strings.Join(msgs, "; ") + ": it never finds a value"
}
