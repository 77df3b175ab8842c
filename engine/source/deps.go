package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"cuelang.org/go/cue/load"
	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"

	"github.com/cueop/cueop/engine/template"
)

// Dep is one module version a module depends on, as CUE resolved it.
type Dep struct {
	Module  string `json:"module"` // with its major version suffix
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Files tells that CUE read its packages; otherwise only its module
	// file (for the version selection) is laid out.
	Files bool `json:"files,omitempty"`
}

func (d Dep) version() (module.Version, error) { return module.NewVersion(d.Module, d.Version) }

// resolveDeps returns the dependencies of the module extracted in dir: the
// module versions CUE's own loader asks for (minimal version selection
// over the module files, the packages the kinds import), each fetched
// into the cache by fetch.
func resolveDeps(ctx context.Context, dir string, fetch func(context.Context, module.Version) (string, error), c *cache) ([]Dep, error) {
	mf, err := readModFile(filepath.Join(dir, "cue.mod", "module.cue"))
	if err != nil || len(mf.Deps) == 0 {
		return nil, err
	}
	pkgs, err := template.PackageDirs(dir)
	if err != nil {
		return nil, err
	}
	reg := &fetching{ctx: ctx, fetch: fetch, c: c, got: map[string]*Dep{}}
	load.Instances(pkgs, &load.Config{Dir: dir, Registry: reg, Env: []string{"CUE_REGISTRY=none"}})
	if reg.err != nil {
		return nil, reg.err
	}
	deps := make([]Dep, 0, len(reg.got))
	for _, d := range reg.got {
		deps = append(deps, *d)
	}
	sort.Slice(deps, func(i, j int) bool {
		return deps[i].Module+"@"+deps[i].Version < deps[j].Module+"@"+deps[j].Version
	})
	return deps, nil
}

// fetching is the loader's registry at fetch time: every module version
// the loader asks for is fetched into the cache and noted. Template
// errors are left for the template load to report; a fetch error fails
// the resolution.
type fetching struct {
	ctx   context.Context
	fetch func(context.Context, module.Version) (digest string, err error)
	c     *cache

	mu  sync.Mutex
	got map[string]*Dep
	err error
}

func (f *fetching) get(mv module.Version, files bool) (string, error) {
	f.mu.Lock()
	d := f.got[mv.String()]
	f.mu.Unlock()
	if d == nil {
		digest, err := f.fetch(f.ctx, mv)
		if err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
			return "", err
		}
		d = &Dep{Module: mv.Path(), Version: mv.Version(), Digest: digest}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if have := f.got[mv.String()]; have != nil {
		d = have
	}
	d.Files = d.Files || files
	f.got[mv.String()] = d
	return f.c.moduleDir(d.Digest), nil
}

func (f *fetching) ModFile(_ context.Context, mv module.Version) (*modfile.File, error) {
	dir, err := f.get(mv, false)
	if err != nil {
		return nil, err
	}
	return readModFile(filepath.Join(dir, "cue.mod", "module.cue"))
}

func (f *fetching) Fetch(_ context.Context, mv module.Version) (module.SourceLoc, error) {
	dir, err := f.get(mv, true)
	if err != nil {
		return module.SourceLoc{}, err
	}
	return module.SourceLoc{FS: module.OSDirFS(dir), Dir: "."}, nil
}

func (f *fetching) ModuleVersions(context.Context, string) ([]string, error) {
	return nil, fmt.Errorf("module versions: the module file lists the versions to use (run cue mod tidy before publishing)")
}

func readModFile(name string) (*modfile.File, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return modfile.ParseNonStrict(data, name)
}
