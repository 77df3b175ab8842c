package template

import (
	"fmt"

	"cuelang.org/go/cue"
)

// PoliciesContract is the file name positions in the policies contract
// carry, so that errors can name the template's position instead.
const PoliciesContract = "policies contract"

// policiesSchema is the contract of `policies`. Every field is optional:
// render fills the defaults (render.DefaultPolicy): recreate false (true
// for a Pod), cascade "orphan" ("background" for a Pod), prune "always"
// and onDelete "delete", but prune "never" and onDelete "retain" for a
// child of a data kind (a PersistentVolumeClaim, and the kinds of
// --data-kinds), as a StatefulSet retains its claims.
const policiesSchema = `[string]: close({
	recreate?: bool
	cascade?:  "orphan" | "background"
	prune?:    "always" | "never"
	onDelete?: "delete" | "retain"
	adopt?:    "never" | "released" | "uncontrolled"
})`

// withPolicies checks the template's policies against their contract and
// returns v with the contract unified in, so that each render checks the
// values that depend on the CR too. A template without policies is returned
// as it is: it costs nothing at render time.
func withPolicies(v cue.Value) (cue.Value, error) {
	p := v.LookupPath(PathPolicies)
	if !p.Exists() {
		return v, nil
	}
	if k := p.IncompleteKind(); k != cue.StructKind {
		return v, fmt.Errorf("%s: %s must be a struct of policies keyed by child id, not %v", p.Pos(), PathPolicies, k)
	}
	schema := v.Context().CompileString(policiesSchema, cue.Filename(PoliciesContract))
	if err := p.Unify(schema).Validate(); err != nil {
		return v, fmt.Errorf("%s: %w", PathPolicies, Positioned(err))
	}
	out := v.FillPath(PathPolicies, schema)
	if err := out.Err(); err != nil {
		return v, fmt.Errorf("%s: %w", PathPolicies, Positioned(err))
	}
	return out, nil
}
