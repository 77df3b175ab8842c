package template

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue/load"
	"cuelang.org/go/mod/modfile"
)

// Loading is hermetic: the templates directory is all a template can read.
// No module registry is asked (so no network and no module cache): a
// module's dependencies load from the directory itself (vendored.go), and
// a module that declares one not there is refused before anything is
// loaded.

// loadConfig is the loader's configuration for a templates directory read
// through snap.
func loadConfig(snap *snapshot) *load.Config {
	return &load.Config{
		FS:         snap,
		Dir:        "/",
		ModuleRoot: "/",
		FromFSPath: snap.fromFS,
		Registry:   vendored{snap},
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
	if deps := missingDeps(snap, mf); len(deps) > 0 {
		return fmt.Errorf("%s: deps %s refused: templates are loaded hermetically, without a module registry; copy what they need into the templates directory, or load the module from a registry (--templates oci://...), which lays them out in %s", name, strings.Join(deps, ", "), DepsDir)
	}
	if err := readDepModules(snap); err != nil {
		return err
	}
	if _, err := snap.Stat("cue.mod/local-module.cue"); err == nil {
		return fmt.Errorf("%s: refused: templates are loaded hermetically, without module replacements", filepath.Join(snap.root, "cue.mod", "local-module.cue"))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
