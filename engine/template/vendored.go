package template

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"
)

// A module's dependencies load from inside the templates directory: each
// module version its module file requires lies in
// cue.mod/deps/<module>@<version>/ (DepDir), as a registry source lays it
// out (engine/source), and is read through the same snapshot as the
// module's own files: within the directory, within the same limits, and
// part of the revision and the Files of every kind that imports it. CUE
// resolves the versions (minimal version selection over the module files)
// as it would against a registry; a version it asks for that is not there
// is an error, never a download.

// DepsDir holds the vendored dependencies of a templates directory.
const DepsDir = "cue.mod/deps"

// DepDir is the directory, relative to the module root, of the dependency
// mv.
func DepDir(mv module.Version) string {
	return DepsDir + "/" + mv.BasePath() + "@" + mv.Version()
}

// vendored is the loader's registry: the dependencies under DepsDir.
type vendored struct{ snap *snapshot }

func (v vendored) ModFile(_ context.Context, mv module.Version) (*modfile.File, error) {
	name := DepDir(mv) + "/" + moduleFile
	data, err := v.snap.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("module %s: %w", mv, errNoRegistry)
	}
	if err != nil {
		return nil, err
	}
	return modfile.ParseNonStrict(data, v.snap.fromFS("/"+name))
}

func (v vendored) Fetch(_ context.Context, mv module.Version) (module.SourceLoc, error) {
	dir := DepDir(mv)
	if _, err := v.snap.Stat(dir + "/" + moduleFile); err != nil {
		return module.SourceLoc{}, fmt.Errorf("module %s: %w", mv, errNoRegistry)
	}
	return module.SourceLoc{FS: depFS{v.snap}, Dir: dir}, nil
}

// ModuleVersions lists the vendored versions of mpath (with or without its
// major version suffix).
func (v vendored) ModuleVersions(_ context.Context, mpath string) ([]string, error) {
	base, major, hasMajor := strings.Cut(mpath, "@")
	entries, err := v.snap.ReadDir(path.Join(DepsDir, path.Dir(base)))
	if err != nil {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		name, vers, ok := strings.Cut(e.Name(), "@")
		if ok && name == path.Base(base) && (!hasMajor || strings.HasPrefix(vers, major+".")) {
			out = append(out, vers)
		}
	}
	sort.Strings(out)
	return out, nil
}

// depFS serves a dependency's files from the snapshot. CUE names a
// dependency's files by its FS's OS root: "/" is the snapshot's own
// namespace, so that positions name the files inside the directory.
type depFS struct{ *snapshot }

func (depFS) OSRoot() string { return "/" }

// missingDeps returns the module versions mf requires that are not
// vendored.
func missingDeps(snap *snapshot, mf *modfile.File) []string {
	var missing []string
	for _, mv := range mf.DepVersions() {
		if _, err := snap.Stat(DepDir(mv) + "/" + moduleFile); err != nil {
			missing = append(missing, mv.Path())
		}
	}
	sort.Strings(missing)
	return missing
}

// readDepModules reads the module file of every vendored dependency, so
// that each kind's revision and Files hold them all, whichever of them
// CUE asks for while loading one package or all of them.
func readDepModules(snap *snapshot) error {
	if _, err := snap.Stat(DepsDir); err != nil {
		return nil
	}
	return fs.WalkDir(snap, DepsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.Contains(d.Name(), "@") {
			return err
		}
		if _, err := snap.ReadFile(p + "/" + moduleFile); err != nil {
			return err
		}
		return fs.SkipDir
	})
}

// moduleLevel tells the files every kind is built from: the module file
// and the module files of the vendored dependencies.
func moduleLevel(name string) bool {
	return name == moduleFile || (strings.HasPrefix(name, DepsDir+"/") && strings.HasSuffix(name, "/"+moduleFile))
}
