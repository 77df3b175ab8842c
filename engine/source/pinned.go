package source

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// pinned is the file recording, by reference, what it resolved to last:
// what a restart serves first.
type pinned struct {
	Refs map[string]Resolved `json:"refs"`
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
