package source

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"

	"github.com/cueop/cueop/engine/template"
)

// cache is the module cache directory:
//
//	modules/sha256/<hex>/  one module version's files, by manifest digest
//	trees/<hash>/          a layout of the modules served (layout.go)
//	templates/..data       the symlink to the layout serving
//	pinned.json            the digests resolved (pinned.go)
type cache struct {
	dir      string
	limits   template.Limits
	maxFiles int // entries of a module's archive (harden.go)
}

// moduleDir is where the module version of manifest digest lies.
func (c *cache) moduleDir(digest string) string {
	algo, hex, _ := strings.Cut(digest, ":")
	return filepath.Join(c.dir, "modules", algo, hex)
}

// has tells whether the module version of digest is extracted.
func (c *cache) has(digest string) bool {
	_, err := os.Stat(filepath.Join(c.moduleDir(digest), "cue.mod", "module.cue"))
	return err == nil
}

// maxModule bounds a module's archive and its files together.
func (c *cache) maxModule() int64 { return 4 * c.limits.MaxTotalSize }

// extract writes the files of a module's archive to its directory, each
// within the file limit and all within maxModule; the module file must
// name the module fetched. It stops when ctx is done. An archive refused
// for what it holds, not for the time or the disk, is a *refusedError.
func (c *cache) extract(ctx context.Context, mv module.Version, digest string, archive []byte) error {
	who := describe(mv, digest)
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return &refusedError{fmt.Errorf("module %s: archive: %w", who, err)}
	}
	if err := c.checkEntries(ctx, zr); err != nil {
		return refused(ctx, fmt.Errorf("module %s: %w", who, err))
	}
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, "modules"), ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var total int64
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("module %s: %w extracting: %w", who, errCheckStopped, err)
		}
		n, err := c.extractFile(tmp, f, c.maxModule()-total)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) { // the disk's, not the archive's
				return fmt.Errorf("module %s: %w", who, err)
			}
			return refused(ctx, fmt.Errorf("module %s: %w", who, err))
		}
		total += n
	}
	if err := checkModuleFile(tmp, mv); err != nil {
		return &refusedError{fmt.Errorf("module %s: %w", who, err)}
	}
	dst := c.moduleDir(digest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil && !c.has(digest) {
		return err
	}
	return nil
}

// extractFile writes one file of an archive below dir, refusing one over
// the file limit or over left, the bytes the module may still hold.
func (c *cache) extractFile(dir string, f *zip.File, left int64) (int64, error) {
	if strings.HasSuffix(f.Name, "/") {
		return 0, nil
	}
	if !fs.ValidPath(f.Name) || !f.Mode().IsRegular() {
		return 0, fmt.Errorf("file %q: not a regular file inside the module: refused", f.Name)
	}
	max := c.limits.MaxFileSize
	if f.UncompressedSize64 > uint64(max) {
		return 0, fmt.Errorf("file %s holds %d bytes, more than the %d a template file may hold: refused (raise --template-max-file-size)", f.Name, f.UncompressedSize64, max)
	}
	if f.UncompressedSize64 > uint64(left) {
		return 0, fmt.Errorf("its files hold more than the %d bytes a module may (four times --template-max-total-size): refused at %s", c.maxModule(), f.Name)
	}
	rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Name, err)
	}
	defer rc.Close()
	data, err := readBounded(rc, min(max, left), "file "+f.Name)
	if err != nil {
		return 0, err
	}
	p := filepath.Join(dir, filepath.FromSlash(f.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Name, err)
	}
	// O_EXCL: checkEntries refused a name given twice; a file is never
	// written over another.
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Name, err)
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return 0, fmt.Errorf("file %s: %w", f.Name, err)
	}
	return int64(len(data)), w.Close()
}

// checkModuleFile checks that the extracted module names mv.
func checkModuleFile(dir string, mv module.Version) error {
	name := filepath.Join(dir, "cue.mod", "module.cue")
	data, err := os.ReadFile(name)
	if err != nil {
		return errors.New("no cue.mod/module.cue in its archive")
	}
	mf, err := modfile.ParseNonStrict(data, "cue.mod/module.cue")
	if err != nil {
		return err
	}
	if got := mf.QualifiedModule(); got != mv.Path() {
		return fmt.Errorf("cue.mod/module.cue names module %s, not %s", got, mv.Path())
	}
	return nil
}

// copyTree copies the regular files below src to dst.
func copyTree(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if !keep(filepath.ToSlash(rel)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
}

func all(string) bool { return true }

// writeAtomic writes a file by renaming a complete one over it.
func writeAtomic(name string, data []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
