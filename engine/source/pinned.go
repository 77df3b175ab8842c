package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"cuelang.org/go/mod/module"
)

// Resolved is what a reference resolved to: the module version and
// manifest digest serving, and its dependencies.
type Resolved struct {
	Ref     string `json:"ref"`
	Module  string `json:"module"` // with its major version suffix
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Deps    []Dep  `json:"deps,omitempty"`
}

// pinned is the file recording, by reference, what it resolved to last
// and what the operator last accepted (accept.go): a restart serves the
// accepted one first, the last resolved when none was accepted.
type pinned struct {
	Refs     map[string]Resolved `json:"refs"`
	Accepted map[string]Resolved `json:"accepted,omitempty"`
}

// restart is what a restart serves of ref: the accepted record, else the
// last resolved.
func (p pinned) restart(ref string) (Resolved, bool) {
	if r, ok := p.Accepted[ref]; ok {
		return r, true
	}
	r, ok := p.Refs[ref]
	return r, ok
}

// pin is the record of a pinned reference's digest, whichever of the
// accepted and the last resolved holds it: the dependencies its first
// fetch resolved, which every later fetch of the pin must find again.
func (p pinned) pin(ref Ref) *Resolved {
	if !ref.Pinned() {
		return nil
	}
	for _, m := range []map[string]Resolved{p.Accepted, p.Refs} {
		if r, ok := m[ref.Raw]; ok && r.Digest == ref.Digest && r.Deps != nil {
			return &r
		}
	}
	return nil
}

// vouched tells that a record holds ref's pinned digest: a fetch of the
// pin found its version's tag naming that digest (Source.checkTag).
func (p pinned) vouched(ref Ref) bool {
	if !ref.Pinned() {
		return false
	}
	for _, m := range []map[string]Resolved{p.Accepted, p.Refs} {
		if r, ok := m[ref.Raw]; ok && r.Digest == ref.Digest {
			return true
		}
	}
	return false
}

// checkDep refuses a dependency of the pinned module r whose tag now
// names another digest than the one recorded with the pin in where
// (Source.recordNames): a pin covers the module and what it depends on.
func (r *Resolved) checkDep(ref Ref, mv module.Version, digest, where string) error {
	for _, d := range r.Deps {
		if d.Module == mv.Path() && d.Version == mv.Version() && d.Digest != digest {
			return fmt.Errorf("dependency %s@%s moved: its tag names digest %s, not %s recorded in %s with the pin %s: refused (remove the pin's record from %s, every replica stopped, to take the new content)",
				mv.BasePath(), mv.Version(), digest, d.Digest, where, ref.Raw, where)
		}
	}
	return nil
}

const pinnedFile = "pinned.json"

func readPinned(dir string) (pinned, error) {
	p := pinned{Refs: map[string]Resolved{}}
	data, err := os.ReadFile(filepath.Join(dir, pinnedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return pinned{Refs: map[string]Resolved{}}, err
	}
	if p.Refs == nil {
		p.Refs = map[string]Resolved{}
	}
	if p.Accepted == nil {
		p.Accepted = map[string]Resolved{}
	}
	return p, nil
}

func (p pinned) write(dir string) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, pinnedFile), data)
}

// cached tells whether every module version of r is in the cache.
func (c *cache) cached(r Resolved) bool {
	if r.Digest == "" || !c.has(r.Digest) {
		return false
	}
	for _, d := range r.Deps {
		if !c.has(d.Digest) {
			return false
		}
	}
	return true
}
