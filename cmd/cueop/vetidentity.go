package main

import (
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// vetIdentities says, by kind name, what each kind acts as and the rights
// it needs, from what its golden cases and samples render (the same
// computation as `cueop manifests`). A case that fails to render adds
// nothing: vetCases reports it.
func vetIdentities(set *template.Set, testdata, samples string, opts render.Options, f identityFlags) (map[string]string, error) {
	kinds, _ := kindRights(set, testdata, samples, opts)
	ids, err := identities(kinds, f)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, k := range set.Kinds {
		if ids == nil {
			out[k.Name] = "the operator's own (--shared-identity)"
			continue
		}
		out[k.Name] = ids[i].String()
	}
	return out, nil
}
