// How a render that cannot be applied reads: Error, with its reason;
// CUE's errors worded by the CR field path or the child id at their CUE
// position (spec errors without the noise of defaults, a disjunction's
// alternatives named; a #Status field the template leaves open at its
// declaration; an unguarded read of observed explained); SpecErrorOf, the
// same wording of what a spoke version's schema refuses.
//
// It must not lose an error or its source: every message names the CR
// field path or the child id and the CUE file:line:column.

package render

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

// undefinedField matches CUE's "undefined field: x" (x quoted when it is
// not an identifier).
var undefinedField = regexp.MustCompile(`undefined field: ("(?:[^"\\]|\\.)*"|[^\s()]+)`)

// observedHint explains an "undefined field: x" where x is a child the
// render produces but that is not observed: the template reads observed.x
// without a guard. observed.x is absent until the child exists, and in a
// render without observed children (`cueop render`, the first render of a
// golden case), so such a template fails every render (it never creates
// the child). Only called on a render error; the children's ids come from
// the template filled again (within the render's budget).
func observedHint(k *template.Kind, parent *unstructured.Unstructured, in Inputs, err error) error {
	observed := in.Observed
	var rerr *Error
	if !errors.As(err, &rerr) {
		return err
	}
	var ids map[string]bool
	for i, msg := range rerr.Messages {
		m := undefinedField.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		id := m[1]
		if u, err := strconv.Unquote(id); err == nil {
			id = u
		}
		if observed[id] != nil {
			continue
		}
		if ids == nil {
			ids = childIDs(fill(k, parent, in))
		}
		if !ids[id] {
			continue
		}
		ref := "observed." + m[1]
		if m[1] != id {
			ref = "observed[" + m[1] + "]"
		}
		rerr.Messages[i] = msg + fmt.Sprintf(" (observed children may be absent: %s is there only once the child %s exists, "+
			"not in the render that creates it; guard the read, as in `if %s != _|_ {...}` or `*%s.status.x | 0`)", ref, id, ref, ref)
	}
	return err
}

// childIDs are the ids of the children v has, concrete or not.
func childIDs(v cue.Value) map[string]bool {
	ids := map[string]bool{}
	it, err := v.LookupPath(template.PathChildren).Fields()
	if err != nil {
		return ids
	}
	for it.Next() {
		ids[it.Selector().Unquoted()] = true
	}
	return ids
}

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

// SpecErrorOf is what the schema spec (a spoke version's #Spec) refuses of
// spec, worded as a render words the hub's spec errors: by the spec's field
// paths, the noise of defaults and enums left out, with the schema's
// positions. Nil when it refuses nothing.
func SpecErrorOf(schema cue.Value, spec map[string]any) *Error {
	ctx := schema.Context()
	v := ctx.CompileString("parent: spec: _").FillPath(template.PathParentSpec, schema).FillPath(template.PathParentSpec, ctx.Encode(spec))
	return specError(v, schema.Pos())
}
