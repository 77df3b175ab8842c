package template

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Positions in a module fetched from a registry (engine/source) name files
// of the module cache (.../trees/<hash>/<dir>/queue.cue), which tell a
// reader nothing: they read as the module path and version instead,
// example.com/queue@v1.2.0:queue.cue:75:12, and a file of one of its
// dependencies (<dir>/cue.mod/deps/example.com/lib@v0.1.0/lib.cue) as
// example.com/lib@v0.1.0:lib.cue.

// moduleDirs maps the directory of each module of a directory of modules
// loaded (absolute, resolved) to its module@version.
var moduleDirs sync.Map

// registerModules records the modules of the directory of modules root;
// the entries of directories gone since (trees the source replaced) are
// dropped, so that the map stays as large as what serves.
func registerModules(root string, mods []ModuleDir) {
	moduleDirs.Range(func(dir, _ any) bool {
		if _, err := os.Stat(dir.(string)); err != nil {
			moduleDirs.Delete(dir)
		}
		return true
	})
	for _, m := range mods {
		if m.Source.Module == "" || m.Source.Version == "" {
			continue
		}
		base, _, _ := strings.Cut(m.Source.Module, "@")
		moduleDirs.Store(filepath.Join(root, m.Dir), base+"@"+m.Source.Version)
	}
}

// registerModulesAt records the modules of root, a directory of modules
// already resolved, from its ModulesFile.
func registerModulesAt(root string) {
	if mods, ok, err := readModules(root, Limits{}); ok && err == nil {
		registerModules(root, mods)
	}
}

// DisplayName is the name positions give the file name: module@version:path
// for a file of a module fetched from a registry or of one of its
// dependencies, else name.
func DisplayName(name string) string {
	if !filepath.IsAbs(name) {
		return name
	}
	for dir := filepath.Dir(name); ; dir = filepath.Dir(dir) {
		if mv, ok := moduleDirs.Load(dir); ok {
			rel, err := filepath.Rel(dir, name)
			if err != nil {
				return name
			}
			return moduleName(mv.(string), filepath.ToSlash(rel))
		}
		if parent := filepath.Dir(dir); parent == dir {
			return name
		}
	}
}

// moduleName names rel, a slash path in module mv: a file below
// cue.mod/deps/<module>@<version>/ by its dependency.
func moduleName(mv, rel string) string {
	if deps, ok := strings.CutPrefix(rel, DepsDir+"/"); ok {
		elems := strings.Split(deps, "/")
		for i, e := range elems[:len(elems)-1] {
			if strings.Contains(e, "@") {
				return strings.Join(elems[:i+1], "/") + ":" + strings.Join(elems[i+1:], "/")
			}
		}
	}
	return mv + ":" + rel
}
