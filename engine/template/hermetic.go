package template

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue/load"
	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"
)

// Loading is hermetic: the templates directory is all a template can read.
// No module registry is asked (so no network and no module cache), and a
// module that declares dependencies is refused before anything is loaded.

// loadConfig is the loader's configuration for a templates directory read
// through snap.
func loadConfig(snap *snapshot) *load.Config {
	return &load.Config{
		FS:         snap,
		Dir:        "/",
		ModuleRoot: "/",
		FromFSPath: snap.fromFS,
		Registry:   noRegistry{},
		Env:        []string{"CUE_REGISTRY=none"},
	}
}

// checkModule refuses a module file that declares dependencies and a
// local-module.cue (its replacements point at other directories).
func checkModule(snap *snapshot) error {
	name := filepath.Join(snap.root, filepath.FromSlash(moduleFile))
	data, err := snap.ReadFile(moduleFile)
	if err != nil {
		return fmt.Errorf("not a CUE module (%s: %w)", name, err)
	}
	mf, err := modfile.ParseNonStrict(data, name)
	if err != nil {
		return err
	}
	if len(mf.Deps) > 0 {
		deps := make([]string, 0, len(mf.Deps))
		for p := range mf.Deps {
			deps = append(deps, p)
		}
		sort.Strings(deps)
		return fmt.Errorf("%s: deps %s refused: templates are loaded hermetically, without a module registry; copy what they need into the templates directory", name, strings.Join(deps, ", "))
	}
	if _, err := snap.Stat("cue.mod/local-module.cue"); err == nil {
		return fmt.Errorf("%s: refused: templates are loaded hermetically, without module replacements", filepath.Join(snap.root, "cue.mod", "local-module.cue"))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// noRegistry is the loader's registry: it has no module at all.
type noRegistry struct{}

func (noRegistry) ModFile(_ context.Context, mv module.Version) (*modfile.File, error) {
	return nil, fmt.Errorf("module %s: %w", mv, errNoRegistry)
}

func (noRegistry) Fetch(_ context.Context, mv module.Version) (module.SourceLoc, error) {
	return module.SourceLoc{}, fmt.Errorf("module %s: %w", mv, errNoRegistry)
}

func (noRegistry) ModuleVersions(_ context.Context, mpath string) ([]string, error) {
	return nil, fmt.Errorf("module %s: %w", mpath, errNoRegistry)
}
