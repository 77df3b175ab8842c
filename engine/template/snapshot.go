package template

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// snapshot is the templates directory as the loader and CUE's @embed see
// it. It is the one door to the files of a load:
//
//   - every path resolves, after following symlinks, inside the root (an
//     os.Root): a symlink out of the directory is refused, and the refusal
//     names the file, the link and where it points;
//   - editor swap and backup files are not there;
//   - only regular files are read, never blocking, each and those of a
//     package together within Limits (limits.go);
//   - each file is read once and its bytes are kept, so that CUE compiles
//     and the revision hashes the very same bytes, whatever is written to
//     the directory in between.
//
// Directories are listed live; only file contents are kept.
type snapshot struct {
	root string // absolute, as positions show it
	real string // root with its own symlinks resolved
	r    *os.Root

	limits   Limits
	packages map[string]bool // package directories, slash paths relative to root

	mu      sync.Mutex
	files   map[string][]byte // by slash path relative to root
	refused map[string]error  // by slash path relative to root
	used    map[string]int64  // bytes read, by package directory (packageOf)
}

func openSnapshot(root string) (*snapshot, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	return openSnapshotAt(root, real)
}

// openSnapshotAt reads the directory real as if it were root: positions
// and errors name root.
func openSnapshotAt(root, real string) (*snapshot, error) {
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &snapshot{
		root: root, real: real, r: r, limits: Limits{}.WithDefaults(), packages: map[string]bool{},
		files: map[string][]byte{}, refused: map[string]error{}, used: map[string]int64{},
	}, nil
}

func (s *snapshot) Close() error { return s.r.Close() }

// fromFS maps a loader path ("/app/app.cue") to the file's real path, which
// positions and error messages show.
func (s *snapshot) fromFS(p string) string {
	return filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(p, "/")))
}

// Open implements fs.FS.
func (s *snapshot) Open(name string) (fs.File, error) {
	fi, err := s.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		f, err := s.openDir(name)
		if err != nil {
			return nil, s.explain("open", name, err)
		}
		return f, nil
	}
	data, err := s.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{info: fi, data: data}, nil
}

// Stat implements fs.StatFS.
func (s *snapshot) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	fi, err := s.r.Stat(name)
	if err != nil {
		return nil, s.explain("stat", name, err)
	}
	return fi, nil
}

// ReadFile implements fs.ReadFileFS: the first read of a file is the one
// every later read gets.
func (s *snapshot) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	s.mu.Lock()
	data, ok := s.files[name]
	s.mu.Unlock()
	if ok {
		return data, nil
	}
	data, err := s.checkRead(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if first, ok := s.files[name]; ok {
		return first, nil
	}
	s.files[name] = data
	return data, nil
}

// ReadDir implements fs.ReadDirFS. Editor files are left out; a symlink
// that stays inside the root is listed as what it points to (as a
// ConfigMap volume's per-file links are), one that leaves it as a link.
func (s *snapshot) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	entries, err := s.readDir(name)
	if err != nil {
		return nil, s.explain("readdir", name, err)
	}
	out := entries[:0]
	var cue int64 // bytes of the package files listed
	for _, e := range entries {
		if IsEditorFile(e.Name()) {
			continue
		}
		p := path.Join(name, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := s.r.Stat(p); err == nil {
				e = fs.FileInfoToDirEntry(fi)
			} else if strings.HasSuffix(e.Name(), ".cue") {
				_ = s.explain("readdir", p, err) // a package file out of the directory
			}
		}
		if strings.HasSuffix(e.Name(), ".cue") && !e.IsDir() && !s.listable(p, e, &cue) {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// readDir lists the directory name, sorted by file name, as fs.ReadDir
// does, but never blocks on what is not a directory (openDir).
func (s *snapshot) readDir(name string) ([]fs.DirEntry, error) {
	f, err := s.openDir(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, err
}

// openDir opens the directory name. CUE asks to list paths that may be no
// directory: an @embed glob lists the directory part of its pattern, and
// with a wildcard there (glob="*/*.yaml") every entry of the package
// directory; a directory may also be swapped for something else after its
// stat. os.ReadDir opens with O_DIRECTORY, but the os.Root's fs.FS opens
// plainly: a named pipe there held the load until a writer opened the
// pipe, for good once the pipe was removed (a compile that never ended,
// abandoned at its wall-clock budget: once --render-max-abandoned of them
// hung, the kind's later compiles were refused as busy, and no edit
// loaded). O_DIRECTORY refuses anything else (ENOTDIR) without opening it,
// as a regular file in that place is: not a directory, nothing in it read.
func (s *snapshot) openDir(name string) (*os.File, error) {
	return s.r.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}

// explain turns an error of the os.Root into one that names the symlink
// leading out of the root and its target, and records it.
func (s *snapshot) explain(op, name string, err error) error {
	link, target, ok := s.escapingLink(name)
	if !ok {
		return err
	}
	full := filepath.Join(s.root, filepath.FromSlash(name))
	e := fmt.Errorf("%s: symlink %s -> %s leads out of the templates directory %s: refused", full, filepath.Join(s.root, filepath.FromSlash(link)), target, s.root)
	// CUE probes for nested modules (cue.mod) on the way: the file it
	// wanted is the one worth naming.
	if path.Base(name) != "cue.mod" {
		s.mu.Lock()
		if _, seen := s.refused[name]; !seen {
			s.refused[name] = e
		}
		s.mu.Unlock()
	}
	return &fs.PathError{Op: op, Path: name, Err: e}
}

// escapingLink finds the first element of name that is a symlink whose
// target resolves outside the root.
func (s *snapshot) escapingLink(name string) (link, target string, ok bool) {
	elems := strings.Split(name, "/")
	for i := range elems {
		p := strings.Join(elems[:i+1], "/")
		full := filepath.Join(s.root, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if err != nil {
			return "", "", false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		t, _ := os.Readlink(full)
		resolved, err := filepath.EvalSymlinks(full)
		if err != nil {
			resolved = t
			if !filepath.IsAbs(resolved) {
				resolved = filepath.Join(filepath.Dir(full), t)
			}
		}
		if !within(s.real, resolved) && !within(s.root, resolved) {
			return p, t, true
		}
	}
	return "", "", false
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// refusedUnder returns the refusals of files below any of dirs (slash paths
// relative to the root, "." for the root), sorted.
func (s *snapshot) refusedUnder(dirs []string) []error {
	return s.refusedWhere(func(name string) bool { return under(name, dirs) })
}

// refusedAbove returns the refusals of files directly in the directories
// above dir (a slash path relative to the root, up to the root itself):
// CUE takes a file of the same package name there into dir's package, so
// a refused one may be a part of it left out.
func (s *snapshot) refusedAbove(dir string) []error {
	var above []string
	for d := path.Dir(dir); d != dir; dir, d = d, path.Dir(d) {
		above = append(above, d)
	}
	return s.refusedWhere(func(name string) bool {
		return slices.Contains(above, path.Dir(name)) && strings.HasSuffix(name, ".cue")
	})
}

// refusedWhere returns the refusals of the files keep takes, sorted by name.
func (s *snapshot) refusedWhere(keep func(name string) bool) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.refused {
		if keep(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	errs := make([]error, 0, len(names))
	for _, n := range names {
		errs = append(errs, s.refused[n])
	}
	return errs
}

// revision hashes the module file and every file read below dirs: what the
// kind was compiled from, byte for byte.
func (s *snapshot) revision(dirs []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.files {
		if moduleLevel(name) || under(name, dirs) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(s.files[n]))
		h.Write(s.files[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// filesUnder returns the module file and every file read below dirs, as
// revision hashes them.
func (s *snapshot) filesUnder(dirs []string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	files := map[string][]byte{}
	for name, data := range s.files {
		if moduleLevel(name) || under(name, dirs) {
			files[name] = data
		}
	}
	return files
}

const moduleFile = "cue.mod/module.cue"

func under(name string, dirs []string) bool {
	for _, d := range dirs {
		if d == "." || name == d || strings.HasPrefix(name, d+"/") {
			return true
		}
	}
	return false
}

// IsEditorFile tells the swap, backup and lock files editors leave next to
// the file being edited (vim's .swp, emacs' ~, .#lock and #autosave#): they
// are never part of a template, and writing them is no template change.
func IsEditorFile(name string) bool {
	base := path.Base(filepath.ToSlash(name))
	switch {
	case strings.HasSuffix(base, "~"),
		strings.HasPrefix(base, ".#"),
		len(base) > 1 && strings.HasPrefix(base, "#") && strings.HasSuffix(base, "#"):
		return true
	}
	for _, ext := range []string{".swp", ".swo", ".swx"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return false
}

// memFile is a kept file's bytes served as an fs.File.
type memFile struct {
	info fs.FileInfo
	data []byte
	off  int
}

func (f *memFile) Stat() (fs.FileInfo, error) { return sizedInfo{f.info, int64(len(f.data))}, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(b []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(b, f.data[f.off:])
	f.off += n
	return n, nil
}

// sizedInfo reports the size of the kept bytes, not of the file now.
type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64        { return i.size }
func (i sizedInfo) ModTime() time.Time { return i.FileInfo.ModTime() }

var errNoRegistry = errors.New("templates are loaded hermetically: no module registry")
