package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Error is a render that cannot be applied: the spec breaks a constraint,
// the template fails for this spec, or a child is refused. Nothing of a
// render that returns an Error may be applied.
type Error struct {
	Reason string
	// Messages each name their source: the CR field path or the child id,
	// and the CUE file:line:column.
	Messages []string
}

func (e *Error) Error() string { return strings.Join(e.Messages, "\n") }

// evalError classifies a CUE evaluation error. Errors on parent.spec are the
// user's input and are named by their CR field path (spec.replicas).
func evalError(err error) *Error {
	out := &Error{Reason: wellknown.ReasonTemplateError}
	for _, e := range cueerrors.Errors(err) {
		msg := template.FormatError(e)
		if _, ok := specField(e.Path()); ok {
			out.Reason = wellknown.ReasonInvalidSpec
			msg = specMessage(e, token.NoPos)
		}
		out.Messages = append(out.Messages, msg)
	}
	if len(out.Messages) == 0 {
		out.Messages = []string{err.Error()}
	}
	return out
}

// specError reports what is wrong with the parent's spec alone, so that a
// bad field is not drowned in the errors it causes downstream. Of the errors
// on one field, conflicts with the branches of a disjunction (a default, an
// enum) are dropped when a more telling error is there, and merged into one
// "not one of" message when they are all there is.
func specError(v cue.Value, fallback token.Pos) *Error {
	err := v.LookupPath(template.PathParentSpec).Validate(cue.Concrete(true))
	if err == nil {
		return nil
	}
	byPath := map[string][]cueerrors.Error{}
	var order []string
	for _, e := range cueerrors.Errors(err) {
		if isDisjunctionHeader(e) {
			continue
		}
		path := strings.Join(e.Path(), ".")
		if _, ok := byPath[path]; !ok {
			order = append(order, path)
		}
		byPath[path] = append(byPath[path], e)
	}
	out := &Error{Reason: wellknown.ReasonInvalidSpec}
	for _, path := range order {
		for _, msg := range fieldMessages(byPath[path], fallback) {
			out.Messages = appendUnique(out.Messages, msg)
		}
	}
	return out
}

func fieldMessages(errs []cueerrors.Error, fallback token.Pos) []string {
	var specific, conflicts []cueerrors.Error
	for _, e := range errs {
		if isConflict(e) {
			conflicts = append(conflicts, e)
		} else {
			specific = append(specific, e)
		}
	}
	if len(specific) == 0 && len(conflicts) > 1 {
		msg, kept := notOneOf(conflicts)
		if msg != "" {
			return []string{msg}
		}
		conflicts = kept
	}
	if len(specific) == 0 {
		specific = conflicts
	}
	var msgs []string
	for _, e := range specific {
		msgs = append(msgs, specMessage(e, fallback))
	}
	return msgs
}

// notOneOf merges "conflicting values A and X", "B and X", ... into
// "X is not one of A, B". An alternative that another one covers (the
// default 2 of `*2 | int`) is left out; when a single one is left, msg is
// empty and kept are the conflicts with the alternatives left.
func notOneOf(conflicts []cueerrors.Error) (msg string, kept []cueerrors.Error) {
	count := map[string]int{}
	for _, e := range conflicts {
		for _, a := range conflictValues(e) {
			count[a]++
		}
	}
	var value string
	var options, pos []string
	for _, e := range conflicts {
		for _, a := range conflictValues(e) {
			if count[a] == len(conflicts) {
				value = a
			} else {
				options = appendUnique(options, a)
			}
		}
		pos = append(pos, template.Positions(e)...)
	}
	options = withoutCovered(options)
	if len(options) < 2 {
		for _, e := range conflicts {
			for _, a := range conflictValues(e) {
				if slices.Contains(options, a) {
					kept = append(kept, e)
					break
				}
			}
		}
		return "", kept
	}
	field, _ := specField(conflicts[0].Path())
	sort.Strings(options)
	return fmt.Sprintf("%s: %s is not one of %s (template %s)", field, value, strings.Join(options, ", "), firstPos(pos)), nil
}

func firstPos(pos []string) string {
	if len(pos) == 0 {
		return "?"
	}
	sort.Strings(pos)
	return pos[0]
}

func isConflict(e cueerrors.Error) bool {
	format, _ := e.Msg()
	return strings.HasPrefix(format, "conflicting values")
}

func isDisjunctionHeader(e cueerrors.Error) bool {
	format, _ := e.Msg()
	return strings.Contains(format, "errors in empty disjunction")
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// specField maps parent.spec.x.y to spec.x.y.
func specField(path []string) (string, bool) {
	if len(path) < 2 || path[0] != template.FieldParent || path[1] != "spec" {
		return "", false
	}
	return strings.Join(path[1:], "."), true
}

func specMessage(e cueerrors.Error, fallback token.Pos) string {
	field, _ := specField(e.Path())
	format, args := e.Msg()
	msg := fmt.Sprintf("%s: %s", field, fmt.Sprintf(format, args...))
	if missing(format) {
		// A CR's spec is concrete data: a value still incomplete is one
		// the CR left out (CUE would say `incomplete value =~"^[a-z]..."`).
		msg = "required field missing: " + field
	}
	pos := template.Positions(e)
	if len(pos) == 0 && fallback.IsValid() {
		pos = []string{template.ShortPos(fallback)}
	}
	if len(pos) > 0 {
		msg += " (template " + strings.Join(pos, ", ") + ")"
	}
	return msg
}

// missing says whether a spec error's format is CUE's for a value not
// given: an incomplete value, or a required field (`name!:`) not present.
func missing(format string) bool {
	return strings.HasPrefix(format, "incomplete value") || strings.HasPrefix(format, "non-concrete value") ||
		strings.Contains(format, "field is required but not present")
}

func childError(id string, v cue.Value, format string, args ...any) string {
	msg := fmt.Sprintf("children.%s: %s", id, fmt.Sprintf(format, args...))
	if p := v.Pos(); p.IsValid() {
		return template.ShortPos(p) + ": " + msg
	}
	return msg
}
