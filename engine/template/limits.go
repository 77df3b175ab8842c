package template

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// Limits bound what a load reads. Only regular files are read, and a read
// never blocks: a named pipe, a device or a socket in the templates
// directory (as a package file, or matched by an @embed file or glob) is
// refused with its name.
type Limits struct {
	// MaxFileSize is the most bytes one file may hold; 0 means
	// DefaultMaxFileSize.
	MaxFileSize int64
	// MaxTotalSize is the most bytes the files of one kind may hold
	// together: its package directory, the files embedded below it and the
	// local packages it imports, as its revision counts them; 0 means
	// DefaultMaxTotalSize.
	MaxTotalSize int64
}

// The shipped templates' largest file is about 5 KiB and their largest kind
// about 6 KiB: the defaults leave two orders of magnitude of room, and a
// templates directory mounted from a ConfigMap (1 MiB at most) fits them.
const (
	DefaultMaxFileSize  = 1 << 20
	DefaultMaxTotalSize = 4 << 20
)

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = DefaultMaxTotalSize
	}
	return l
}

// readRegular reads name below r: a regular file (after following symlinks
// inside r) of at most max bytes. The kind and size are checked by stat
// before the file is opened, so a sparse file of any size costs no read;
// the file is opened non-blocking (a pipe swapped in meanwhile cannot hold
// the read) and checked again on the open descriptor; the read stops one
// byte past max, however the file grew.
func readRegular(r *os.Root, name string, max int64) ([]byte, error) {
	fi, err := r.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(fi, max); err != nil {
		return nil, err
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(fi, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &tooLarge{what: "it grew past", size: int64(len(data)), max: max}
	}
	return data, nil
}

// checkRegular refuses what is not a regular file, or one larger than max.
func checkRegular(fi fs.FileInfo, max int64) error {
	if !fi.Mode().IsRegular() {
		return &notRegular{mode: fi.Mode()}
	}
	if fi.Size() > max {
		return &tooLarge{what: "it holds", size: fi.Size(), max: max}
	}
	return nil
}

// notRegular is a file of another type than a regular file.
type notRegular struct{ mode fs.FileMode }

func (e *notRegular) Error() string {
	return fmt.Sprintf("%s, not a regular file: refused (templates read regular files only)", fileType(e.mode))
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file (" + m.Type().String() + ")"
}

// tooLarge is a file over the size limit.
type tooLarge struct {
	what      string
	size, max int64
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%s %d bytes, more than the %d a template file may hold: refused (raise --template-max-file-size)", e.what, e.size, e.max)
}

// totalTooLarge refuses a kind whose files hold more than max together.
type totalTooLarge struct {
	size, max int64
}

func (e *totalTooLarge) Error() string {
	return fmt.Sprintf("its files hold %d bytes together, more than the %d a kind may read: refused (raise --template-max-total-size)", e.size, e.max)
}

// checkRead reads name for the snapshot within its limits: the file itself,
// then the bytes already read for the package directory holding it (a file
// that would carry its package past the total is refused by its stat size,
// before any read). A refusal names the file and is recorded for compile.
func (s *snapshot) checkRead(name string) ([]byte, error) {
	dir := s.packageOf(name)
	s.mu.Lock()
	left := s.limits.MaxTotalSize - s.used[dir]
	s.mu.Unlock()
	data, err := readRegular(s.r, name, min(s.limits.MaxFileSize, left))
	var big *tooLarge
	var other *notRegular
	switch {
	case errors.As(err, &big) && big.size <= s.limits.MaxFileSize:
		return nil, s.refuse(name, &totalTooLarge{size: s.limits.MaxTotalSize - left + big.size, max: s.limits.MaxTotalSize})
	case errors.As(err, &big), errors.As(err, &other):
		return nil, s.refuse(name, err)
	case err != nil:
		return nil, s.explain("read", name, err)
	}
	s.mu.Lock()
	s.used[dir] += int64(len(data))
	s.mu.Unlock()
	return data, nil
}

// listable tells whether the package file p, listed as e, may be read: a
// regular file within the file limit that keeps the package files listed
// so far (*sum) within the total. Others are left out of the listing, so
// that CUE's loader, which fails every package when one file cannot be read,
// never asks for them, and recorded: compile refuses the package naming
// the file.
func (s *snapshot) listable(p string, e fs.DirEntry, sum *int64) bool {
	if e.Type()&fs.ModeSymlink != 0 {
		return true // a link out of the directory: explained above
	}
	fi, err := e.Info()
	if err != nil {
		return true // gone meanwhile: the read will say so
	}
	if err := checkRegular(fi, s.limits.MaxFileSize); err != nil {
		_ = s.refuse(p, err)
		return false
	}
	if *sum += fi.Size(); *sum > s.limits.MaxTotalSize {
		_ = s.refuse(p, &totalTooLarge{size: *sum, max: s.limits.MaxTotalSize})
		return false
	}
	return true
}

// packageOf returns the package directory holding name (slash, relative to
// the root): the nearest of its parent directories that holds CUE files, or
// "." for a file outside every package.
func (s *snapshot) packageOf(name string) string {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if s.packages[d] {
			return d
		}
	}
	return "."
}

// refuse records why name was not read and returns the error, naming the
// file.
func (s *snapshot) refuse(name string, err error) error {
	full := filepath.Join(s.root, filepath.FromSlash(name))
	e := fmt.Errorf("%s: %w", full, err)
	s.mu.Lock()
	if _, seen := s.refused[name]; !seen {
		s.refused[name] = e
	}
	s.mu.Unlock()
	return &fs.PathError{Op: "read", Path: name, Err: e}
}

// checkTotal refuses a kind whose files (below dirs, and the module file)
// hold more than the total limit together.
func (s *snapshot) checkTotal(dirs []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for name, data := range s.files {
		if moduleLevel(name) || under(name, dirs) {
			n += int64(len(data))
		}
	}
	if n > s.limits.MaxTotalSize {
		return &totalTooLarge{size: n, max: s.limits.MaxTotalSize}
	}
	return nil
}
