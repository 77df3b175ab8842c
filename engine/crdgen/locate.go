package crdgen

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// Locate sets the CUE position in k, the new template, of each schema
// change: the field's (for a rename, the new field's); for a field k no
// longer has, the nearest enclosing field's, with Removed set; for a version
// change, resource.version's.
func Locate(k *template.Kind, cs []schemacompat.Change) {
	for i := range cs {
		locate(k, &cs[i])
	}
}

func locate(k *template.Kind, c *schemacompat.Change) {
	if len(c.Path) == 0 {
		at := template.PathResourceVersion
		if ver := k.Version(c.Version); ver != nil && !ver.Hub {
			at = cue.MakePath(cue.Str(template.FieldVersions), cue.Str(c.Version))
		}
		if v := k.Value.LookupPath(at); v.Pos().IsValid() {
			c.Pos = v.Pos().String()
		}
		return
	}
	p := c.Path
	if c.NewPath != nil {
		p = c.NewPath
	}
	for n := len(p); n > 0; n-- {
		if pos := fieldPos(k, c.Version, p[:n]); pos.IsValid() {
			c.Pos, c.Removed = pos.String(), n < len(p)
			return
		}
	}
}

// fieldPos is the position of the #Spec field at p (spec.a[_].b) of the
// version the change is to (the hub's #Spec for a kind with one version),
// or token.NoPos.
func fieldPos(k *template.Kind, version string, p schemacompat.Path) token.Pos {
	if p[0] != "spec" {
		return token.NoPos
	}
	v := k.Spec
	if ver := k.Version(version); ver != nil {
		v = ver.Spec
	}
	for _, e := range p[1:] {
		switch e {
		case schemacompat.Items:
			v = v.LookupPath(cue.MakePath(cue.AnyIndex))
		case schemacompat.Values:
			v = v.LookupPath(cue.MakePath(cue.AnyString))
		default:
			v = lookupField(v, e)
		}
		if !v.Exists() {
			return token.NoPos
		}
	}
	return v.Pos()
}

// lookupField returns field name of v, regular, optional or required.
func lookupField(v cue.Value, name string) cue.Value {
	for _, sel := range []cue.Selector{cue.Str(name), cue.Str(name).Optional(), cue.Str(name).Required()} {
		if f := v.LookupPath(cue.MakePath(sel)); f.Exists() {
			return f
		}
	}
	return cue.Value{}
}
