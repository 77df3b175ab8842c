package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cueop/cueop/engine/template"
)

// dataLink is the symlink, below templates/, to the layout serving: the
// name a ConfigMap volume uses, which the loader follows (template.LoadWith).
const dataLink = "..data"

// templatesDir is the directory the operator loads and watches.
func (c *cache) templatesDir() string { return filepath.Join(c.dir, "templates") }

// layout lays out rs, one module directory each with its dependencies in
// cue.mod/deps, in a tree named by their digests, and makes it the one
// templates/ serves. It answers whether that changed what serves.
func (c *cache) layout(refs []Ref, rs []Resolved) (bool, error) {
	mods := make([]template.ModuleDir, len(rs))
	for i, r := range rs {
		mods[i] = template.ModuleDir{Dir: refs[i].Dir(), Source: template.Source{Ref: r.Ref, Module: r.Module, Version: r.Version, Digest: r.Digest}}
	}
	index, err := json.MarshalIndent(mods, "", "  ")
	if err != nil {
		return false, err
	}
	deps, _ := json.Marshal(rs)
	sum := sha256.Sum256(append(append([]byte{}, index...), deps...))
	name := hex.EncodeToString(sum[:8])
	tree := filepath.Join(c.dir, "trees", name)
	if _, err := os.Stat(tree); err != nil {
		if err := c.writeTree(tree, mods, rs, index); err != nil {
			return false, err
		}
	}
	return c.swap(name)
}

func (c *cache) writeTree(tree string, mods []template.ModuleDir, rs []Resolved, index []byte) error {
	if err := os.MkdirAll(filepath.Dir(tree), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tree), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i, r := range rs {
		dir := filepath.Join(tmp, mods[i].Dir)
		if err := copyTree(c.moduleDir(r.Digest), dir, all); err != nil {
			return err
		}
		for _, d := range r.Deps {
			mv, err := d.version()
			if err != nil {
				return err
			}
			keep := func(rel string) bool { return d.Files || rel == "cue.mod/module.cue" }
			if err := copyTree(c.moduleDir(d.Digest), filepath.Join(dir, filepath.FromSlash(template.DepDir(mv))), keep); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, template.ModulesFile), index, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, tree)
}

// swap points templates/..data at trees/name, atomically, and removes the
// trees older than the one it replaces (a render worker that still asks
// for one is sent its files).
func (c *cache) swap(name string) (bool, error) {
	dir := c.templatesDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	link := filepath.Join(dir, dataLink)
	target := filepath.Join("..", "trees", name)
	old, _ := os.Readlink(link)
	if old == target {
		return false, nil
	}
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, link); err != nil {
		return false, fmt.Errorf("templates %s: %w", dir, err)
	}
	c.prune(name, filepath.Base(old))
	return true, nil
}

// prune removes every tree but keep.
func (c *cache) prune(keep ...string) {
	entries, _ := os.ReadDir(filepath.Join(c.dir, "trees"))
	for _, e := range entries {
		kept := false
		for _, k := range keep {
			kept = kept || e.Name() == k
		}
		if !kept {
			_ = os.RemoveAll(filepath.Join(c.dir, "trees", e.Name()))
		}
	}
}
