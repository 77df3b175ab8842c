package admission

import (
	"regexp"
	"strings"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/template"
)

// unknownField matches the path of a field a schema does not declare in
// kschema's error: ".spec.template.spec.containerz: field not declared in
// schema".
var unknownField = regexp.MustCompile(`\.([A-Za-z0-9_.\[\]-]+): field not declared in schema`)

// childPos is where the template writes the field of child id that err
// names, when the template writes it as a field of a literal child
// (not under a comprehension the CR decides); else "".
func childPos(k *template.Kind, id string, err error) string {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	sels := []cue.Selector{cue.Str(id)}
	for _, part := range strings.Split(m[1], ".") {
		name, _, _ := strings.Cut(part, "[")
		sels = append(sels, cue.Str(name))
		if strings.Contains(part, "[") {
			sels = append(sels, cue.AnyIndex)
		}
	}
	v := k.Value.LookupPath(template.PathChildren).LookupPath(cue.MakePath(sels...))
	if p := v.Pos(); v.Exists() && p.IsValid() {
		return template.ShortPos(p)
	}
	return ""
}
