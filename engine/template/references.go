package template

import (
	"fmt"

	"cuelang.org/go/cue"
)

// ReferencesContract is the file name positions in the references contract
// carry.
const ReferencesContract = "references contract"

// referencesSchema is the contract of `references`: each is an object by
// name or a label selection, never both.
const referencesSchema = `[string]: close({
	apiVersion!: string
	kind!:       string
	name?:       string
	selector?: close({
		matchLabels?: [string]: string
		matchExpressions?: [...close({
			key!:      string
			operator!: "In" | "NotIn" | "Exists" | "DoesNotExist"
			values?: [...string]
		})]
	})
})`

// withReferences checks the template's references against their contract
// and returns v with the contract unified in. A template without references
// is returned as it is: it costs nothing at render time.
func withReferences(v cue.Value) (cue.Value, bool, error) {
	return withContract(v, PathReferences, referencesSchema, ReferencesContract, "references keyed by id")
}

// withContract unifies the optional field at p with schema, after checking
// that the template's value is a struct that fits it. It reports whether the
// field exists.
func withContract(v cue.Value, p cue.Path, schema, file, what string) (cue.Value, bool, error) {
	f := v.LookupPath(p)
	if !f.Exists() {
		return v, false, nil
	}
	if k := f.IncompleteKind(); k != cue.StructKind {
		return v, true, fmt.Errorf("%s: %s must be a struct of %s, not %v", f.Pos(), p, what, k)
	}
	s := v.Context().CompileString(schema, cue.Filename(file))
	if err := f.Unify(s).Validate(); err != nil {
		return v, true, fmt.Errorf("%s: %w", p, Positioned(err))
	}
	out := v.FillPath(p, s)
	if err := out.Err(); err != nil {
		return v, true, fmt.Errorf("%s: %w", p, Positioned(err))
	}
	return out, true, nil
}
