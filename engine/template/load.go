package template

import (
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

	"github.com/cueop/cueop/engine/budget"
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
	// Claims holds, by package, why another package claiming its kind's
	// Kind.group or CRD name was refused (claims.go): the package keeps
	// serving, and its report names the refused one.
	Claims map[string]error
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

// Load loads and compiles every kind below dir with the default budget
// (LoadWith).
func Load(dir string) (*Set, error) { return LoadWith(dir, LoadOptions{}) }

// LoadOptions bound a load.
type LoadOptions struct {
	// Budget bounds the evaluation of each package; compiling a kind may
	// take CompileBudgetFactor times a render's budget.
	Budget budget.Budget
	// Limits bound the files read (limits.go).
	Limits Limits
	// Admit, when set, is asked before each package of root is compiled
	// (loadkind.go): an error refuses the package (it is Broken with that
	// error), and check, when not nil, is asked about the compiled kind.
	Admit func(root, name string) (check func(*Kind) error, err error)
	// Holders, when set, says who holds a kind's Kind.group and CRD name
	// already (claims.go): a second package claiming one is refused.
	Holders Holders

	inModule bool // loading one module of a directory of modules
}

// CompileBudgetFactor is how many renders' worth of budget compiling one
// kind may use.
const CompileBudgetFactor = 4

// LoadWith loads and compiles every kind below dir. A package is a kind
// when it defines `resource`; other packages are helpers for kinds to
// import. Every error of every kind is reported, each naming its CUE
// file:line:column. When only some packages are broken, LoadWith returns the
// good kinds in the Set together with the error, and Set.Broken names the
// broken packages.
//
// Loading is hermetic (hermetic.go) and reads the directory through a
// snapshot (snapshot.go): every file resolves inside the directory, and a
// kind's Revision hashes exactly the bytes it was compiled from.
func LoadWith(dir string, opts LoadOptions) (*Set, error) {
	root, err := resolveRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	if mods, ok, err := readModules(root, opts.Limits); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return loadModules(root, mods, opts) // modules.go
	}
	snap, err := openSnapshot(root)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	defer snap.Close()
	snap.limits = opts.Limits.WithDefaults()
	if err := checkModule(snap); err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	pkgs, err := packageDirs(root)
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", dir, err)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("templates %s: no CUE package found", dir)
	}
	for i, p := range pkgs {
		snap.packages[strings.TrimPrefix(p, "./")] = true
		pkgs[i] = "/" + strings.TrimPrefix(p, "./")
	}
	insts := load.Instances(pkgs, loadConfig(snap))
	set := &Set{Root: root, Broken: map[string]error{}}
	b := opts.Budget.Scale(CompileBudgetFactor)
	var errs []error
	for _, inst := range insts {
		k, err := compileAdmitted(opts, b, snap, inst)
		if err != nil {
			set.Broken[relName(root, inst.Dir)] = err
			errs = append(errs, err)
			continue
		}
		if k != nil {
			k.Source = Source{Ref: root}
			set.Kinds = append(set.Kinds, k)
		}
	}
	sort.Slice(set.Kinds, func(i, j int) bool { return set.Kinds[i].Name < set.Kinds[j].Name })
	if len(set.Kinds) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("templates %s: no kind found (no package defines %q)", dir, PathResource)
	}
	if !opts.inModule {
		errs = append(errs, resolveClaims(set, opts.Holders)) // claims.go
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
	return filepath.EvalSymlinks(root)
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

// compileBudgeted compiles inst within b, on a CUE context of its own: an
// abandoned compile must not share a context with the next one.
func compileBudgeted(b budget.Budget, snap *snapshot, inst *build.Instance) (*Kind, error) {
	name := relName(snap.root, inst.Dir)
	var k *Kind
	err := b.Run("compile "+name, func(t *budget.Tracker) error {
		t.Phase("package " + name)
		var err error
		k, err = compile(cuecontext.New(), snap, inst)
		return err
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return nil, fmt.Errorf("package %s: %w%s", name, err, hotspotHint(Hotspots(inst)))
	}
	var busy *budget.Busy
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	return k, err
}

// compile builds one instance. It returns nil, nil for a helper package.
func compile(ctx *cue.Context, snap *snapshot, inst *build.Instance) (*Kind, error) {
	root := snap.root
	name := relName(root, inst.Dir)
	dirs := packageDirsOf(root, inst)
	if refused := append(snap.refusedUnder(dirs), snap.refusedAbove(name)...); len(refused) > 0 {
		return nil, fmt.Errorf("package %s: %w", name, errors.Join(refused...))
	}
	if inst.Err != nil { // a refused file of a dependency may be why (vendored.go)
		return nil, fmt.Errorf("package %s: %w", name, errors.Join(append(snap.refusedUnder([]string{DepsDir}), Positioned(inst.Err))...))
	}
	if err := checkHermetic(inst, map[*build.Instance]bool{}); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	v := ctx.BuildInstance(inst)
	if refused := snap.refusedUnder(dirs); len(refused) > 0 {
		return nil, fmt.Errorf("package %s: %w", name, errors.Join(append(refused, Positioned(v.Err()))...))
	}
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, Positioned(err))
	}
	if err := snap.checkTotal(dirs); err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	if !v.LookupPath(PathResource).Exists() {
		return nil, nil
	}
	k, err := newKind(v, inst)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", name, err)
	}
	k.Name, k.Dir = name, inst.Dir
	k.Revision = snap.revision(dirs)
	k.Files = snap.filesUnder(dirs)
	k.Hotspots = Hotspots(inst)
	k.Reads = AnalyzeReads(inst)
	k.Outputs = analyzeOutputs(inst, v)
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

// packageDirsOf returns the directories, relative to root and slash
// separated, of inst and of every local package it imports, and the files
// of theirs CUE took from a parent directory (a file of the same package
// name there is part of the package): what the kind is compiled from.
func packageDirsOf(root string, inst *build.Instance) []string {
	dirs := map[string]bool{inst.Dir: true}
	collectDirs(root, inst, dirs)
	files := map[string]bool{}
	collectFiles(root, inst, map[*build.Instance]bool{}, files)
	out := make([]string, 0, len(dirs)+len(files))
	for d := range dirs {
		out = append(out, relName(root, d))
	}
	for f := range files {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// collectFiles adds to files the files of inst and its local imports that
// lie outside their package directories.
func collectFiles(root string, inst *build.Instance, seen map[*build.Instance]bool, files map[string]bool) {
	if seen[inst] || !strings.HasPrefix(inst.Dir, root) {
		return
	}
	seen[inst] = true
	for _, f := range inst.BuildFiles {
		if filepath.Dir(f.Filename) != inst.Dir && strings.HasPrefix(f.Filename, root+string(filepath.Separator)) {
			files[relName(root, f.Filename)] = true
		}
	}
	for _, imp := range inst.Imports {
		collectFiles(root, imp, seen, files)
	}
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
