package source

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"
)

// A module's publisher is not trusted: its archive is checked whole before
// a file is written (checkEntries), every registry answer is bounded in
// size (boundedTransport) and every resolution in time (FetchTimeout), and
// the cache is checked writable when the Source is made.

const (
	// DefaultFetchTimeout bounds the resolution of one reference: its
	// manifest, archive and dependencies. A registry that hangs or
	// trickles bytes fails the fetch; what serves is left as it is.
	DefaultFetchTimeout = 5 * time.Minute
	// DefaultMaxModuleFiles is the most files a module's archive may hold.
	DefaultMaxModuleFiles = 10000
)

// checkEntries refuses an archive before any of its files is written: more
// entries than maxFiles, a name that is not a slash path inside the module
// (../x, /x, x/../y, a NUL), one deeper than MaxEntryDepth, longer than
// MaxEntryName or with an element longer than MaxEntryElement, one that is not a regular file (a symlink, a device), one
// given twice, one inside a file, one below cue.mod/deps (the layout's,
// never a module's), or declared sizes over the limits. The sizes are checked again while reading
// (extractFile): a header may lie. Its work is linear in the size of the
// archive's names (checkNames), and it stops when ctx is done.
func (c *cache) checkEntries(ctx context.Context, zr *zip.Reader) error {
	_, err := c.checkNames(ctx, zr)
	return err
}

const (
	// MaxEntryDepth is the most path elements an entry of a module's
	// archive may have, and MaxEntryName the longest its name may be: a
	// template module is not a deep tree, and the bounds keep the check of
	// an entry's parents within a constant of its name's length.
	MaxEntryDepth = 64
	MaxEntryName  = 1024
	// MaxEntryElement is the longest one element of an entry's name may
	// be: the longest file name Linux file systems hold (NAME_MAX). A
	// longer one would fail its extraction as the disk's error, not the
	// archive's, and the archive be fetched again at every poll.
	MaxEntryElement = 255
)

// checkNames is checkEntries; it answers its work as well, the bytes of
// names and parent names it hashed or scanned, for the tests to bound.
func (c *cache) checkNames(ctx context.Context, zr *zip.Reader) (work int, err error) {
	if len(zr.File) > c.maxFiles {
		return 0, fmt.Errorf("its archive holds %d entries, more than the %d a module may: refused before extraction", len(zr.File), c.maxFiles)
	}
	t := newNameTree(len(zr.File))
	var total uint64
	for i, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return t.work, fmt.Errorf("%w at entry %d of %d: %w", errCheckStopped, i+1, len(zr.File), err)
		}
		name, dir, err := t.checkName(f)
		if err != nil {
			return t.work, err
		}
		if err := t.add(f, name, dir); err != nil {
			return t.work, err
		}
		if dir {
			continue
		}
		if err := c.checkSize(f, &total); err != nil {
			return t.work, err
		}
	}
	return t.work, nil
}

// nameTree is the tree of an archive's entry names, built in one pass:
// each name is found element by element from the root, by its parent's
// node and the element, so its work is its own length however deep it
// is. work counts the bytes of names and elements scanned.
type nameTree struct {
	nodes []nameNode
	ids   map[nameEdge]int
	work  int
}

// nameEdge is an element of a name under its parent's node.
type nameEdge struct {
	parent int
	elem   string
}

// nameNode is a name or a parent of names: given as an entry, a file
// entry, a parent of other names.
type nameNode struct{ entry, file, parent bool }

func newNameTree(entries int) *nameTree {
	return &nameTree{nodes: []nameNode{{parent: true}}, ids: make(map[nameEdge]int, entries)} // the root
}

// find is the node of elem under the node parent, added if new.
func (t *nameTree) find(parent int, elem string) int {
	t.work += len(elem) + 1
	if id, ok := t.ids[nameEdge{parent, elem}]; ok {
		return id
	}
	t.nodes = append(t.nodes, nameNode{})
	t.ids[nameEdge{parent, elem}] = len(t.nodes) - 1
	return len(t.nodes) - 1
}

// checkName refuses f's name on its own: too long, too deep, not a slash
// path inside the module, below cue.mod/deps, or not a regular file nor
// a directory. It answers the name without its final slash, and dir when
// it had one.
func (t *nameTree) checkName(f *zip.File) (name string, dir bool, err error) {
	if len(f.Name) > MaxEntryName {
		return "", false, fmt.Errorf("entry %q: a name of %d bytes, more than the %d a module's file may have: refused", clip(f.Name), len(f.Name), MaxEntryName)
	}
	name = strings.TrimSuffix(f.Name, "/")
	dir = name != f.Name
	t.work += len(f.Name)
	if depth := strings.Count(name, "/") + 1; depth > MaxEntryDepth {
		return "", false, fmt.Errorf("entry %q: %d path elements deep, more than the %d a module's file may be: refused", clip(f.Name), depth, MaxEntryDepth)
	}
	switch {
	case !fs.ValidPath(name) || name == "." || strings.ContainsAny(f.Name, "\\\x00"):
		return "", false, fmt.Errorf("entry %q: not a path inside the module: refused", clip(f.Name))
	case name == "cue.mod/deps" || strings.HasPrefix(name, "cue.mod/deps/"):
		return "", false, fmt.Errorf("entry %q: cue.mod/deps is where the operator lays out the dependencies it fetched, not part of a module: refused", f.Name)
	case !dir && !f.Mode().IsRegular():
		return "", false, fmt.Errorf("entry %q: %s, not a regular file: refused", f.Name, entryType(f.Mode()))
	}
	return name, dir, nil
}

// add puts the entry f, named name (a directory when dir), in the tree,
// refusing an element longer than MaxEntryElement, an entry inside a
// file, one given twice, and a file with entries inside it.
func (t *nameTree) add(f *zip.File, name string, dir bool) error {
	id, rest := 0, name
	for {
		elem, more, ok := strings.Cut(rest, "/")
		if len(elem) > MaxEntryElement {
			return fmt.Errorf("entry %q: an element of %d bytes, more than the %d a file name may have: refused", clip(f.Name), len(elem), MaxEntryElement)
		}
		id = t.find(id, elem)
		if !ok {
			break
		}
		if t.nodes[id].file {
			return fmt.Errorf("entry %q: inside %q, which is a file: refused", f.Name, name[:len(name)-len(more)-1])
		}
		t.nodes[id].parent = true
		rest = more
	}
	switch n := &t.nodes[id]; {
	case n.entry:
		return fmt.Errorf("entry %q: given twice in the archive: refused", f.Name)
	case !dir && n.parent:
		return fmt.Errorf("entry %q: a file, yet entries lie inside it: refused", f.Name)
	default:
		n.entry, n.file = true, !dir
	}
	return nil
}

// checkSize refuses the file f by its declared size: over the limit of a
// template file, or bringing the total of the module's files, which it
// adds to, over the limit of a module.
func (c *cache) checkSize(f *zip.File, total *uint64) error {
	if f.UncompressedSize64 > uint64(c.limits.MaxFileSize) {
		return fmt.Errorf("file %s holds %d bytes, more than the %d a template file may hold: refused before extraction (raise --template-max-file-size)", f.Name, f.UncompressedSize64, c.limits.MaxFileSize)
	}
	if *total += f.UncompressedSize64; *total > uint64(c.maxModule()) {
		return fmt.Errorf("its files hold more than the %d bytes a module may (four times --template-max-total-size): refused before extraction at %s", c.maxModule(), f.Name)
	}
	return nil
}

// clip shortens a hostile entry name for an error: its start and its end.
func clip(name string) string {
	const keep = 120
	if len(name) <= 2*keep {
		return name
	}
	return fmt.Sprintf("%s...(%d bytes)...%s", name[:keep], len(name)-2*keep, name[len(name)-keep:])
}

func entryType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}

// checkWritable tells, when the Source is made rather than at the first
// fetch, that the module cache cannot be written.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("module cache %s: not writable: %w (--module-cache must name a writable directory)", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// errCheckStopped is a module's archive whose check or extraction was
// stopped by its context.
var errCheckStopped = errors.New("checking its archive: stopped")

// timedOut explains a resolution that ran out of time.
func timedOut(ctx context.Context, ref Ref, timeout time.Duration, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, errCheckStopped) {
		return fmt.Errorf("module reference %s: its archive was not checked within %s (--registry-timeout): %w", ref.Raw, timeout, err)
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("module reference %s: registry %s did not answer within %s (--registry-timeout): %w", ref.Raw, ref.Registry, timeout, err)
	}
	return err
}

// boundedTransport bounds every answer of a registry, whatever the
// request (a tag list, a token, an error body): the largest a module may
// need is its archive.
type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: the registry answers %d bytes, more than the %d a module may need: refused", req.Method, req.URL.Redacted(), resp.ContentLength, t.max)
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max, url: req.URL.Redacted()}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
	url  string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%s: the registry's answer runs past the bytes a module may need: refused", b.url)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one past, to tell an answer of exactly left
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), fmt.Errorf("%s: the registry's answer runs past the bytes a module may need: refused", b.url)
	}
	return n, err
}

// refusedError is an archive refused for what it holds: the same digest
// is refused again, so a Source remembers it (Source.fetch) rather than
// download and check it at every poll.
type refusedError struct{ error }

func (e *refusedError) Unwrap() error { return e.error }

// refused marks err a refusal unless ctx ended the check.
func refused(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return &refusedError{err}
}

// maxRefused bounds the refused digests a Source remembers (refused.go).
const maxRefused = 64
