package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// vetIdentities says, by kind name, what each kind acts as and the rights
// it needs, from what its template declares and its golden cases and
// samples render (kindRights, the same computation as `cueop manifests`):
// three lines each, identity, children and references. A case that fails
// to render adds nothing: vetCases reports it. Where a template does not
// tell a kind is a warning, written to warn; a kind a template declares
// that the allow-lists refuse is the error.
func vetIdentities(set *template.Set, testdata, samples string, opts render.Options, f identityFlags, warn io.Writer) (map[string]string, error) {
	r, _ := kindRights(set, testdata, samples, opts)
	for _, w := range r.warnings {
		fmt.Fprintln(warn, "warn", w)
	}
	if r.refused != nil {
		return nil, r.refused
	}
	ids, err := identities(r.kinds, f)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, k := range set.Kinds {
		id := "the operator's own (--shared-identity)"
		if ids != nil {
			id = ids[i].String()
		}
		out[k.Name] = fmt.Sprintf("     identity     %s\n     children     %s\n     references   %s\n",
			id, kindList(r.kinds[i].Children), kindList(r.kinds[i].References))
	}
	return out, nil
}

// kindList is kinds as --allowed-kinds takes them (Kind.group), sorted,
// or "none".
func kindList(kinds render.KindSet) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.ReplaceAll(kinds.String(), ",", ", ")
}
