package crdgen

import (
	"fmt"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
)

// SchemaError reports a CUE construct that has no structural OpenAPI
// equivalent, or a CUE value that is itself invalid. It names the field
// (#Spec.foo.bar) and the CUE position (file:line:column).
//
// It implements cuelang.org/go/cue/errors.Error, so errors.Positions and
// errors.Details work on it as on any CUE error.
type SchemaError struct {
	// Field is the path of the offending field, e.g. `#Spec.foo.bar`.
	Field string
	// Pos is the CUE position of the offending value; it may be invalid
	// (token.NoPos) when CUE did not record one.
	Pos token.Pos
	// Message says what is wrong and, where there is one, what to write instead.
	Message string
	// Err is the underlying CUE error, if any.
	Err error
}

var _ cueerrors.Error = (*SchemaError)(nil)

// Error returns `<field> (<file:line:column>): <message>`.
func (e *SchemaError) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	if e.Pos.IsValid() {
		fmt.Fprintf(&b, " (%s)", template.ShortPos(e.Pos))
	}
	b.WriteString(": ")
	b.WriteString(e.message())
	return b.String()
}

func (e *SchemaError) message() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

// Unwrap returns the underlying CUE error.
func (e *SchemaError) Unwrap() error { return e.Err }

// Position implements cuelang.org/go/cue/errors.Error.
func (e *SchemaError) Position() token.Pos { return e.Pos }

// InputPositions implements cuelang.org/go/cue/errors.Error.
func (e *SchemaError) InputPositions() []token.Pos { return cueerrors.Positions(e.Err) }

// Path implements cuelang.org/go/cue/errors.Error.
func (e *SchemaError) Path() []string { return []string{e.Field} }

// Msg implements cuelang.org/go/cue/errors.Error.
func (e *SchemaError) Msg() (string, []any) { return "%s", []any{e.message()} }
