package operator

import (
	"strings"

	"github.com/cueop/cueop/engine/template"
)

// accepted are the sources of set, for Options.TemplatesAccepted, that loaded
// and serve every kind of: what a restart may come back on. A registry
// module is told when none of its packages is broken, refused (a claim of
// another module's kind, template/claims.go) or failed to serve (failed,
// by package), whatever the other modules do, so that one team's refused
// version does not hold back another team's; a directory (no module) is
// told only when the whole load passed (err nil). A module that is not
// told keeps the last one accepted recorded.
func accepted(set *template.Set, failed map[string]error, err error) []template.Source {
	bad := map[string]bool{} // module directories, the first element of their packages' names
	for name := range set.Broken {
		bad[moduleDir(name)] = true
	}
	for name := range failed {
		bad[moduleDir(name)] = true
	}
	srcs := make([]template.Source, 0, len(set.Kinds))
	for _, k := range set.Kinds {
		if k.Source.Module == "" && err != nil || k.Source.Module != "" && bad[moduleDir(k.Name)] {
			continue
		}
		srcs = append(srcs, k.Source)
	}
	return srcs
}

// moduleDir is the directory of the module of the package name, in a
// directory of modules (template.ModulesFile).
func moduleDir(name string) string {
	dir, _, _ := strings.Cut(name, "/")
	return dir
}
