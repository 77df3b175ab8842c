package template

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/load"

	"github.com/cueop/cueop/engine/budget"
)

// LoadKind loads and compiles the one package name (relative to root, as
// Kind.Name) of the templates directory root, which is already resolved (a
// Kind's Dir without its Name): what a render worker needs to serve a kind
// without compiling the others. The module file is checked and the
// package compiled within opts.Budget as LoadWith does. A helper package
// (no resource) is nil, nil.
func LoadKind(root, name string, opts LoadOptions) (*Kind, error) {
	if dir, pkg, ok := moduleOf(name, onDisk(root)); ok {
		registerModulesAt(root)
		k, err := LoadKind(filepath.Join(root, dir), pkg, opts)
		return k.withModule(dir, inModuleNames(err))
	}
	snap, err := openSnapshot(filepath.Clean(root))
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", root, err)
	}
	return loadKind(snap, root, name, opts)
}

// LoadKindFiles loads package name as LoadKind does, from files (a Kind's
// Files) rather than from the directory root as it is now: the revision
// those files are, whatever was written to root since. Positions name
// root's files.
func LoadKindFiles(root, name string, files map[string][]byte, opts LoadOptions) (*Kind, error) {
	if dir, pkg, ok := moduleOf(name, inFiles(files)); ok {
		registerModulesAt(root)
		k, err := LoadKindFiles(filepath.Join(root, dir), pkg, filesOf(files, dir), opts)
		return k.withModule(dir, inModuleNames(err))
	}
	tmp, err := os.MkdirTemp("", "cueop-revision-")
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", root, err)
	}
	defer os.RemoveAll(tmp)
	for p, data := range files {
		if !fs.ValidPath(p) {
			return nil, fmt.Errorf("templates %s: file %q: not a path inside the directory", root, p)
		}
		f := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return nil, fmt.Errorf("templates %s: %w", root, err)
		}
		if err := os.WriteFile(f, data, 0o600); err != nil {
			return nil, fmt.Errorf("templates %s: %w", root, err)
		}
	}
	snap, err := openSnapshotAt(filepath.Clean(root), tmp)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", root, err)
	}
	return loadKind(snap, root, name, opts)
}

func loadKind(snap *snapshot, root, name string, opts LoadOptions) (*Kind, error) {
	defer snap.Close()
	snap.limits = opts.Limits.WithDefaults()
	if err := checkModule(snap); err != nil {
		return nil, fmt.Errorf("templates %s: %w", root, err)
	}
	insts := load.Instances([]string{"/" + name}, loadConfig(snap))
	if len(insts) != 1 {
		return nil, fmt.Errorf("templates %s: package %s: found %d instances", root, name, len(insts))
	}
	k, err := compileBudgeted(opts.Budget.Scale(CompileBudgetFactor), snap, insts[0])
	if err != nil {
		return nil, err
	}
	return k, nil
}

// compileAdmitted compiles inst within b once opts.Admit lets it.
func compileAdmitted(opts LoadOptions, b budget.Budget, snap *snapshot, inst *build.Instance) (*Kind, error) {
	if opts.Admit == nil {
		return compileBudgeted(b, snap, inst)
	}
	name := relName(snap.root, inst.Dir)
	check, err := opts.Admit(snap.root, name)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	k, err := compileBudgeted(b, snap, inst)
	if err != nil || k == nil || check == nil {
		return k, err
	}
	if err := check(k); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	return k, nil
}

// Root is the resolved templates directory k was loaded from.
func (k *Kind) Root() string {
	if k.Name == "." {
		return k.Dir
	}
	return filepath.Clean(k.Dir[:len(k.Dir)-len(k.Name)])
}
