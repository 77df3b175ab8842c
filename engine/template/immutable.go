package template

import (
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// ImmutableAttr is the argument of the attribute that marks a #Spec field
// immutable: `class: string @cueop(immutable)`.
const ImmutableAttr = "immutable"

// StatusImmutable is the status field in which the controller records the
// values of the kind's immutable spec fields, keyed by CR field path.
const StatusImmutable = "immutable"

// ImmutableField is a #Spec field marked @cueop(immutable), outside lists
// and maps. The CRD refuses a change of it at admission; render refuses one
// too, against the value it recorded in the CR's status, for changes the
// CRD let through (a CR created, or a CRD installed, before the rule).
type ImmutableField struct {
	// Path is the field's path below spec.
	Path []string
	// Pos is the field's position in the template.
	Pos token.Pos
}

// Key is the field's CR field path, as recorded in status.immutable:
// "spec.storage.class".
func (f ImmutableField) Key() string { return "spec." + strings.Join(f.Path, ".") }

// maxImmutableDepth bounds the walk of nested structs.
const maxImmutableDepth = 32

// ImmutableFields lists the fields of spec marked @cueop(immutable), in
// the order of the schema. Fields within lists and maps are not walked
// (their elements have no stable identity); crdgen reports those.
func ImmutableFields(spec cue.Value) []ImmutableField {
	var out []ImmutableField
	var walk func(v cue.Value, path []string)
	walk = func(v cue.Value, path []string) {
		if len(path) > maxImmutableDepth || v.IncompleteKind() != cue.StructKind {
			return
		}
		it, err := v.Fields(cue.Optional(true))
		if err != nil {
			return
		}
		for it.Next() {
			if !it.Selector().IsString() {
				continue
			}
			p := append(append([]string{}, path...), it.Selector().Unquoted())
			if isImmutable(it.Value()) {
				out = append(out, ImmutableField{Path: p, Pos: it.Value().Pos()})
			}
			walk(it.Value(), p)
		}
	}
	walk(spec, nil)
	return out
}

func isImmutable(v cue.Value) bool {
	a := v.Attribute("cueop")
	if a.Err() != nil {
		return false
	}
	for i := range a.NumArgs() {
		if key, value := a.Arg(i); key == ImmutableAttr && value == "" {
			return true
		}
	}
	return false
}
