package render

import (
	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/template"
)

// SpecErrorOf is what the schema spec (a spoke version's #Spec) refuses of
// spec, worded as a render words the hub's spec errors: by the spec's field
// paths, the noise of defaults and enums left out, with the schema's
// positions. Nil when it refuses nothing.
func SpecErrorOf(schema cue.Value, spec map[string]any) *Error {
	ctx := schema.Context()
	v := ctx.CompileString("parent: spec: _").FillPath(template.PathParentSpec, schema).FillPath(template.PathParentSpec, ctx.Encode(spec))
	return specError(v, schema.Pos())
}
