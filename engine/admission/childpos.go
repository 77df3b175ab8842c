package admission

import (
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/cueop/cueop/engine/template"
)

// unknownField matches the path of a field a schema does not declare in
// kschema's error: ".spec.template.spec.containerz: field not declared in
// schema".
var unknownField = regexp.MustCompile(`\.([A-Za-z0-9_.\[\]-]+): field not declared in schema`)

// childPos is where the template writes the field of child id that err
// names: as a field of a literal child, its position in the value; under
// a comprehension the CR decides, the one place the kind's files write a
// field of that name (labelPos); else "".
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
	parts := strings.Split(m[1], ".")
	name, _, _ := strings.Cut(parts[len(parts)-1], "[")
	return labelPos(k, name)
}

// labelPos is where the kind's CUE files write a field labelled name,
// when they write one such field; "" when none or several (the position
// would be a guess).
func labelPos(k *template.Kind, name string) string {
	var found []token.Pos
	files := make([]string, 0, len(k.Files))
	for f := range k.Files {
		if strings.HasSuffix(f, ".cue") {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, file := range files {
		f, err := parser.ParseFile(file, k.Files[file])
		if err != nil {
			continue
		}
		ast.Walk(f, func(n ast.Node) bool {
			if fl, ok := n.(*ast.Field); ok {
				if l, _, err := ast.LabelName(fl.Label); err == nil && l == name {
					found = append(found, fl.Pos())
				}
			}
			return len(found) < 2
		}, nil)
	}
	if len(found) != 1 {
		return ""
	}
	return template.ShortPos(found[0])
}
