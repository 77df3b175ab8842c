package render

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
)

// conflictValues are the two values of a "conflicting values %s and %s"
// error, without the types its message may add.
func conflictValues(e cueerrors.Error) []string {
	_, args := e.Msg()
	if len(args) > 2 {
		args = args[:2]
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprint(a)
	}
	return out
}

// withoutCovered drops the alternatives that another one subsumes: the
// default 2 of `*2 | int` is no alternative of its own. Alternatives are
// CUE expressions as CUE prints them; one that does not compile is kept.
func withoutCovered(options []string) []string {
	if len(options) < 2 {
		return options
	}
	ctx := cuecontext.New()
	values := make([]cue.Value, len(options))
	for i, o := range options {
		values[i] = ctx.CompileString(o)
	}
	var out []string
	for i, o := range options {
		covered := false
		for j, other := range values {
			if i != j && values[i].Err() == nil && other.Err() == nil && options[j] != o &&
				other.Subsume(values[i]) == nil && values[i].Subsume(other) != nil {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, o)
		}
	}
	return out
}
