package crdgen

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
)

// loc is where the walker is: the field path for errors, the position to
// fall back on when a value has none, and the nesting depths that bound the
// recursion (recursive definitions, very long conjunctions).
type loc struct {
	path      string
	pos       token.Pos
	depth     int
	exprDepth int
	// rebuilt is set once an opaque value was rebuilt from its syntax, so
	// the walker rebuilds at most once.
	rebuilt bool
}

const (
	// maxDepth bounds the nesting of fields, list elements and map values.
	maxDepth = 64
	// maxExprDepth bounds the nesting of one value's expression tree. It
	// also bounds the time spent on pathological input: cue.Value.Expr
	// costs grow with the square of the nesting below the value.
	maxExprDepth = 100
)

func rootLoc(v cue.Value, path string) loc {
	if path == "" {
		path = v.Path().String()
	}
	return loc{path: path, pos: v.Pos()}
}

// field returns the location of field name of the value at l.
func (l loc) field(name string, v cue.Value) loc {
	return l.child("."+cue.Str(name).String(), v)
}

// elem returns the location of the elements of the list at l.
func (l loc) elem(v cue.Value) loc { return l.child("[_]", v) }

// mapValue returns the location of the values of the map at l.
func (l loc) mapValue(v cue.Value) loc { return l.child("[string]", v) }

func (l loc) child(suffix string, v cue.Value) loc {
	c := loc{path: l.path + suffix, pos: l.pos, depth: l.depth + 1}
	if p := v.Pos(); p.IsValid() {
		c.pos = p
	}
	return c
}

// expr returns l one level deeper into an expression tree.
func (l loc) expr() loc {
	l.exprDepth++
	return l
}

// errorf returns a SchemaError at v (or at l, when v has no position).
func (l loc) errorf(v cue.Value, format string, args ...any) error {
	pos := v.Pos()
	if !pos.IsValid() {
		pos = l.pos
	}
	return &SchemaError{Field: l.path, Pos: pos, Message: fmt.Sprintf(format, args...)}
}

// wrap returns a SchemaError at v that wraps a CUE error.
func (l loc) wrap(v cue.Value, err error, format string, args ...any) error {
	e := l.errorf(v, format, args...).(*SchemaError)
	e.Err = err
	return e
}

// checkDepth refuses values nested deeper than the walker goes.
func (l loc) checkDepth(v cue.Value) error {
	if l.depth > maxDepth {
		return l.errorf(v, "nested more than %d levels deep (recursive definitions are not supported)", maxDepth)
	}
	if l.exprDepth > maxExprDepth {
		if msg := selfReference(v); msg != "" {
			return l.errorf(v, "%s", msg)
		}
		return l.errorf(v, "expression nested more than %d levels deep", maxExprDepth)
	}
	return nil
}

// selfReference explains an expression that never ends because v refers
// to itself or to a value that encloses it (size: #Spec.size inside the
// #Spec it names), else "". Inside versions.<name>.#Spec, #Spec names that
// version's own #Spec, not the hub's: the usual slip, with its remedy.
func selfReference(v cue.Value) string {
	root, ref := v.ReferencePath()
	if !root.Exists() {
		return ""
	}
	own, to := v.Path().Selectors(), ref.Selectors()
	if len(to) == 0 || len(to) > len(own) {
		return ""
	}
	for i := range to {
		if to[i].String() != own[i].String() {
			return ""
		}
	}
	what := "a value that encloses it"
	if len(to) == len(own) {
		what = "itself"
	}
	msg := fmt.Sprintf("the schema refers to itself: %s refers to %s, %s", v.Path(), ref, what)
	if len(to) >= 3 && to[0].String() == template.FieldVersions && to[2].String() == template.FieldSpecDef {
		msg += fmt.Sprintf("; inside versions.%s, #Spec names %s's own #Spec, not the hub's: to refer to the hub's schema, name it outside versions (let hubSpec = #Spec, at the top of the file) and use hubSpec",
			to[1], to[1])
	}
	return msg
}
