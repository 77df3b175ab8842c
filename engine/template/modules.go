package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A templates directory may hold several CUE modules, one per
// subdirectory, as a registry source lays out the modules it fetched
// (engine/source): ModulesFile at its root names each subdirectory and the
// Source of its files. Each module loads as a templates directory of its
// own; its kinds are named <subdirectory>/<package>, so that kinds of
// different modules keep distinct, readable names, and LoadKind and
// LoadKindFiles find the module again from such a name.

// ModulesFile, at the root of a directory of modules, lists them.
const ModulesFile = "cueop-modules.json"

// ModuleDir is one module of a directory of modules.
type ModuleDir struct {
	// Dir is the subdirectory holding the module (its cue.mod), one path
	// element.
	Dir string `json:"dir"`
	// Source is where its files came from.
	Source Source `json:"source"`
}

// readModules reads root's ModulesFile; ok is false when there is none.
func readModules(root string, limits Limits) (mods []ModuleDir, ok bool, err error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, false, nil // LoadWith says why
	}
	defer r.Close()
	data, err := readRegular(r, ModulesFile, limits.WithDefaults().MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &mods)
	}
	if err != nil {
		return nil, true, fmt.Errorf("templates %s: %s: %w", root, ModulesFile, err)
	}
	for _, m := range mods {
		if !fs.ValidPath(m.Dir) || strings.Contains(m.Dir, "/") || m.Dir == "." {
			return nil, true, fmt.Errorf("templates %s: %s: module directory %q: not one directory below the root", root, ModulesFile, m.Dir)
		}
	}
	return mods, true, nil
}

// loadModules loads every module of the directory of modules root.
func loadModules(root string, mods []ModuleDir, opts LoadOptions) (*Set, error) {
	set := &Set{Root: root, Broken: map[string]error{}}
	registerModules(root, mods)
	var errs []error
	modOpts := opts
	modOpts.inModule = true // the claims are resolved across the modules, below
	for _, m := range mods {
		dir := filepath.Join(root, m.Dir)
		sub, err := LoadWith(dir, modOpts)
		if err != nil {
			errs = append(errs, fmt.Errorf("module %s: %w", m.Source.Describe(), inModuleNames(err)))
		}
		if sub == nil {
			set.Broken[m.Dir] = inModuleNames(err)
			continue
		}
		for name, err := range sub.Broken {
			set.Broken[m.Dir+"/"+name] = fmt.Errorf("module %s: %w", m.Source.Describe(), inModuleNames(err))
		}
		for _, k := range sub.Kinds {
			set.Kinds = append(set.Kinds, k.inModule(m.Dir, m.Source))
		}
	}
	sort.Slice(set.Kinds, func(i, j int) bool { return set.Kinds[i].Name < set.Kinds[j].Name })
	// One module's claim of another's kind refuses that module's kind,
	// never the others (claims.go).
	errs = append(errs, resolveClaims(set, opts.Holders))
	return set, errors.Join(errs...)
}

// inModuleNames rewrites the file names of the module cache in err's text
// as positions name them (DisplayName): many errors give a position as
// CUE formats it, the absolute file name.
func inModuleNames(err error) error {
	if err == nil {
		return nil
	}
	return renamed{err}
}

// renamed is an error whose text names files by DisplayName.
type renamed struct{ err error }

func (r renamed) Unwrap() error { return r.err }

func (r renamed) Error() string {
	text := r.err.Error()
	moduleDirs.Range(func(dir, _ any) bool {
		prefix := dir.(string) + string(filepath.Separator)
		var b strings.Builder
		for {
			i := strings.Index(text, prefix)
			if i < 0 {
				break
			}
			end := i + len(prefix)
			for end < len(text) && !strings.ContainsRune(": \n\t\"',)", rune(text[end])) {
				end++
			}
			b.WriteString(text[:i] + DisplayName(text[i:end]))
			text = text[end:]
		}
		text = b.String() + text
		return true
	})
	return text
}

// inModule renames k, loaded from the module in subdirectory dir, as a kind
// of the directory of modules.
func (k *Kind) inModule(dir string, src Source) *Kind {
	k.Name = dir + "/" + k.Name
	k.Source = src
	files := make(map[string][]byte, len(k.Files))
	for p, data := range k.Files {
		files[dir+"/"+p] = data
	}
	k.Files = files
	return k
}

// moduleOf splits name, a kind of the directory of modules root, into the
// module's subdirectory and the package in it; ok is false when root is a
// module itself (or neither).
func moduleOf(name string, exists func(string) bool) (dir, pkg string, ok bool) {
	dir, pkg, split := strings.Cut(name, "/")
	if !split || exists(moduleFile) || !exists(path.Join(dir, moduleFile)) {
		return "", "", false
	}
	return dir, pkg, true
}

// onDisk tells whether a file exists below root.
func onDisk(root string) func(string) bool {
	return func(p string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil
	}
}

// inFiles tells whether files holds a file.
func inFiles(files map[string][]byte) func(string) bool {
	return func(p string) bool { _, ok := files[p]; return ok }
}

// filesOf returns the files below dir, relative to it.
func filesOf(files map[string][]byte, dir string) map[string][]byte {
	out := map[string][]byte{}
	for p, data := range files {
		if rest, ok := strings.CutPrefix(p, dir+"/"); ok {
			out[rest] = data
		}
	}
	return out
}

// Describe names the source in an error: the module and version fetched
// and where from, or the directory.
func (s Source) Describe() string {
	if s.Module == "" {
		return s.Ref
	}
	base, _, _ := strings.Cut(s.Module, "@")
	d := base + "@" + s.Version
	if s.Digest != "" {
		d += " (" + s.Digest + ")"
	}
	return d
}

// withModule is inModule for LoadKind's answer (k may be nil).
func (k *Kind) withModule(dir string, err error) (*Kind, error) {
	if k == nil || err != nil {
		return k, err
	}
	return k.inModule(dir, k.Source), nil
}

// PackageDirs lists, as ./relative paths, the directories of the module
// root that hold CUE files, as LoadWith loads them (cue.mod, hidden and _
// directories left out).
func PackageDirs(root string) ([]string, error) { return packageDirs(root) }

// ModuleServing is the digest of the module reference ref that the
// directory of modules dir (behind its ..data symlink, as Load reads it)
// lays out now: "" when dir is no directory of modules, or lays out
// nothing of ref.
func ModuleServing(dir, ref string) string {
	root, err := resolveRoot(dir)
	if err != nil {
		return ""
	}
	mods, _, err := readModules(root, Limits{})
	if err != nil {
		return ""
	}
	for _, m := range mods {
		if m.Source.Ref == ref {
			return m.Source.Digest
		}
	}
	return ""
}
