package template

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
)

// Set is every kind of one templates directory, compiled together.
type Set struct {
	// Root is the absolute templates directory.
	Root string
	// Kinds are sorted by Name.
	Kinds []*Kind
	// Broken holds the error of each package that failed to compile, by
	// package name, so that a caller can keep serving the last good revision
	// of a broken kind while the others move on.
	Broken map[string]error
}

// Lookup returns the kind serving gvk's group and kind, or nil.
func (s *Set) Lookup(group, kind string) *Kind {
	for _, k := range s.Kinds {
		if k.Resource.Group == group && k.Resource.Kind == kind {
			return k
		}
	}
	return nil
}

// Load loads and compiles every kind below dir. A package is a kind when it
// defines `resource`; other packages are helpers for kinds to import. Every
// error of every kind is reported, each naming its CUE file:line:column.
// When only some packages are broken, Load returns the good kinds in the
// Set together with the error, and Set.Broken names the broken packages.
func Load(dir string) (*Set, error) {
	root, err := resolveRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(root, "cue.mod", "module.cue")); err != nil {
		return nil, fmt.Errorf("templates %s: not a CUE module (cue.mod/module.cue: %w)", dir, err)
	}
	pkgs, err := packageDirs(root)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("templates %s: no CUE package found", dir)
	}
	insts := load.Instances(pkgs, &load.Config{Dir: root})
	ctx := cuecontext.New()
	set := &Set{Root: root, Broken: map[string]error{}}
	var errs []error
	for _, inst := range insts {
		k, err := compile(ctx, root, inst)
		if err != nil {
			set.Broken[relName(root, inst.Dir)] = err
			errs = append(errs, err)
			continue
		}
		if k != nil {
			set.Kinds = append(set.Kinds, k)
		}
	}
	sort.Slice(set.Kinds, func(i, j int) bool { return set.Kinds[i].Name < set.Kinds[j].Name })
	if err := checkUnique(set.Kinds); err != nil {
		return nil, err
	}
	if len(set.Kinds) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("templates %s: no kind found (no package defines %q)", dir, PathResource)
	}
	return set, errors.Join(errs...)
}

// resolveRoot returns the absolute directory to load. A directory mounted
// from a ConfigMap keeps its files behind a `..data` symlink that the kubelet
// swaps atomically on update: loading through that symlink reads one
// consistent snapshot (and CUE does not follow the per-file symlinks).
func resolveRoot(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	data := filepath.Join(root, "..data")
	if fi, err := os.Lstat(data); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return filepath.EvalSymlinks(data)
	}
	return root, nil
}

// packageDirs lists, as ./relative paths, the directories below root that
// hold .cue files, leaving out cue.mod and hidden directories. They are
// listed rather than loaded as ./... because CUE matches no package under a
// root whose path has a dot-prefixed element, as a ConfigMap snapshot has.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (d.Name() == "cue.mod" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".cue") {
			rel := "./" + relName(root, filepath.Dir(p))
			if !seen[rel] {
				seen[rel] = true
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	return dirs, err
}

func checkUnique(kinds []*Kind) error {
	seen := map[string]string{}
	var errs []error
	for _, k := range kinds {
		key := k.Resource.Kind + "." + k.Resource.Group
		if other, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("kind %s: defined by both %s and %s", key, other, k.Name))
		}
		seen[key] = k.Name
	}
	return errors.Join(errs...)
}

// compile builds one instance. It returns nil, nil for a helper package.
func compile(ctx *cue.Context, root string, inst *build.Instance) (*Kind, error) {
	name := relName(root, inst.Dir)
	if inst.Err != nil {
		return nil, fmt.Errorf("package %s: %w", name, Positioned(inst.Err))
	}
	if err := checkHermetic(inst, map[*build.Instance]bool{}); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, Positioned(err))
	}
	if !v.LookupPath(PathResource).Exists() {
		return nil, nil
	}
	k, err := newKind(v)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", name, err)
	}
	k.Name, k.Dir = name, inst.Dir
	if k.Revision, err = revision(root, inst); err != nil {
		return nil, fmt.Errorf("kind %s: %w", name, err)
	}
	return k, nil
}

func relName(root, dir string) string {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return dir
	}
	return filepath.ToSlash(rel)
}

// checkHermetic refuses imports of CUE's tool packages, directly or through
// a helper package: templates never run commands or reach the network.
func checkHermetic(inst *build.Instance, seen map[*build.Instance]bool) error {
	if seen[inst] {
		return nil
	}
	seen[inst] = true
	for _, f := range inst.Files {
		for spec := range f.ImportSpecs() {
			path := strings.Trim(spec.Path.Value, `"`)
			if path == "tool" || strings.HasPrefix(path, "tool/") {
				return fmt.Errorf("%s: import of %q refused: templates must be hermetic", ShortPos(spec.Pos()), path)
			}
		}
	}
	for _, imp := range inst.Imports {
		if err := checkHermetic(imp, seen); err != nil {
			return err
		}
	}
	return nil
}

// revision hashes the files of the kind's package, of every local package it
// imports and of the module file, so that any edit that can change the
// kind's output changes its revision.
func revision(root string, inst *build.Instance) (string, error) {
	dirs := map[string]bool{inst.Dir: true}
	collectDirs(root, inst, dirs)
	files := []string{filepath.Join(root, "cue.mod", "module.cue")}
	for d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
				files = append(files, filepath.Join(d, e.Name()))
			}
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && isDirErr(f) {
				continue
			}
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", relName(root, f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:10], nil
}

func isDirErr(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func collectDirs(root string, inst *build.Instance, dirs map[string]bool) {
	for _, imp := range inst.Imports {
		if imp.Dir == "" || dirs[imp.Dir] || !strings.HasPrefix(imp.Dir, root+string(filepath.Separator)) {
			continue
		}
		dirs[imp.Dir] = true
		collectDirs(root, imp, dirs)
	}
}
