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
	"path"
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
// (../x, /x, x/../y), one that is not a regular file (a symlink, a
// device), one given twice, one below cue.mod/deps (the layout's, never a
// module's), or declared sizes over the limits. The sizes are checked
// again while reading (extractFile): a header may lie.
func (c *cache) checkEntries(zr *zip.Reader) error {
	if len(zr.File) > c.maxFiles {
		return fmt.Errorf("its archive holds %d entries, more than the %d a module may: refused before extraction", len(zr.File), c.maxFiles)
	}
	isDir := make(map[string]bool, len(zr.File)) // by name, each entry's
	var total uint64
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		dir := name != f.Name
		switch {
		case !fs.ValidPath(name) || name == "." || strings.Contains(f.Name, `\`):
			return fmt.Errorf("entry %q: not a path inside the module: refused", f.Name)
		case name == "cue.mod/deps" || strings.HasPrefix(name, "cue.mod/deps/"):
			return fmt.Errorf("entry %q: cue.mod/deps is where the operator lays out the dependencies it fetched, not part of a module: refused", f.Name)
		case !dir && !f.Mode().IsRegular():
			return fmt.Errorf("entry %q: %s, not a regular file: refused", f.Name, entryType(f.Mode()))
		}
		if _, twice := isDir[name]; twice {
			return fmt.Errorf("entry %q: given twice in the archive: refused", f.Name)
		}
		isDir[name] = dir
		if dir {
			continue
		}
		if f.UncompressedSize64 > uint64(c.limits.MaxFileSize) {
			return fmt.Errorf("file %s holds %d bytes, more than the %d a template file may hold: refused before extraction (raise --template-max-file-size)", f.Name, f.UncompressedSize64, c.limits.MaxFileSize)
		}
		if total += f.UncompressedSize64; total > uint64(c.maxModule()) {
			return fmt.Errorf("its files hold more than the %d bytes a module may (four times --template-max-total-size): refused before extraction at %s", c.maxModule(), f.Name)
		}
	}
	for name := range isDir { // a file inside a file
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if dir, ok := isDir[d]; ok && !dir {
				return fmt.Errorf("entry %q: inside %q, which is a file: refused", name, d)
			}
		}
	}
	return nil
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

// timedOut explains a resolution that ran out of time.
func timedOut(ctx context.Context, ref Ref, timeout time.Duration, err error) error {
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
