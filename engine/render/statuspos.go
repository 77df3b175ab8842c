package render

import (
	"strconv"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
)

// statusError is evalError for the status of a render. CUE gives no
// position to a #Status field the template leaves missing or not concrete
// when its declaration is a bound or a disjunction (`int & >=0`,
// `"A" | "B"`): such a message gets the position of the field's
// declaration in #Status, or else of the field in status.
func statusError(k *template.Kind, status cue.Value, err error) *Error {
	out := evalError(err)
	errs := cueerrors.Errors(err)
	if len(errs) != len(out.Messages) {
		return out
	}
	for i, e := range errs {
		if len(template.Positions(e)) > 0 {
			continue
		}
		path := e.Path()
		if len(path) < 2 || path[0] != "status" {
			continue
		}
		if p := fieldPos(k.Status, path[1:]); p.IsValid() {
			out.Messages[i] = template.ShortPos(p) + ": " + out.Messages[i] + " (declared in #Status: status must give it a concrete value)"
		} else if p := fieldPos(status, path[1:]); p.IsValid() {
			out.Messages[i] = template.ShortPos(p) + ": " + out.Messages[i]
		}
	}
	return out
}

// fieldPos is the position of the field at path within v, if any.
func fieldPos(v cue.Value, path []string) token.Pos {
	if !v.Exists() {
		return token.NoPos
	}
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		if n, err := strconv.Atoi(p); err == nil {
			sels[i] = cue.Index(n)
		} else {
			sels[i] = cue.Str(p)
		}
	}
	f := v.LookupPath(cue.MakePath(sels...))
	if !f.Exists() {
		return token.NoPos
	}
	return f.Pos()
}
