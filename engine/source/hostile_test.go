package source_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/template"
)

// entry is one entry of a hostile archive.
type entry struct {
	name, body string
	mode       fs.FileMode // 0: a regular file
	raw        *zip.FileHeader
}

const hostileMod = "example.com/evil@v0"

func hostileZip(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		if e.raw != nil {
			w, err := zw.CreateRaw(e.raw)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(e.body))
			continue
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func moduleEntries() []entry {
	return []entry{
		{name: "cue.mod/module.cue", body: sourcetest.ModuleFile(hostileMod, nil)},
		{name: "web/web.cue", body: "package web\n"},
	}
}

// startHostile publishes archive as example.com/evil v0.1.0 and starts a
// Source on it in a cache below a directory of its own; it returns Start's
// error and that directory.
func startHostile(t *testing.T, archive []byte, opts source.Options) (error, string) {
	t.Helper()
	reg := sourcetest.Start(t)
	reg.PublishZip(t, "example.com/evil", "v0.1.0", archive, sourcetest.ModuleFile(hostileMod, nil))
	parent := t.TempDir()
	opts.CacheDir = filepath.Join(parent, "cache")
	s := sourcetest.Open(t, reg.Ref("example.com/evil", "v0.1.0"), opts)
	return s.Start(context.Background()), parent
}

// onlyCache checks that nothing was written beside the cache, nor a module
// extracted in it.
func onlyCache(t *testing.T, parent string) {
	t.Helper()
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "cache" {
		t.Errorf("beside the cache: %v", entries)
	}
	filepath.WalkDir(filepath.Join(parent, "cache"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("written in the cache: %s", p)
		}
		return nil
	})
}

func wantRefused(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", parts)
	}
	for _, p := range append([]string{"module example.com/evil@v0.1.0 (sha256:"}, parts...) {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

// TestHostileArchiveEntries: a module archive whose entries climb out of
// the module, are symlinks, are given twice, hold a NUL or a file name
// longer than a file system's (before: both failed at extraction, as the
// disk's error, and were fetched again at every poll), or shadow the
// layout's cue.mod/deps is refused before a file is written, naming the module and
// the entry.
func TestHostileArchiveEntries(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  []entry
		want string
	}{
		{"dotdot", []entry{{name: "../x", body: "x"}}, `entry "../x": not a path inside the module`},
		{"nested-dotdot", []entry{{name: "web/../../x", body: "x"}}, `entry "web/../../x": not a path inside the module`},
		{"absolute", []entry{{name: "/tmp/x", body: "x"}}, `entry "/tmp/x": not a path inside the module`},
		{"backslash", []entry{{name: `..\x`, body: "x"}}, `not a path inside the module`},
		{"symlink", []entry{{name: "web/link.cue", body: "../../../etc/passwd", mode: fs.ModeSymlink | 0o777}}, `entry "web/link.cue": a symlink, not a regular file`},
		{"duplicate", []entry{{name: "web/web.cue", body: "package web\nx: 1\n"}}, `entry "web/web.cue": given twice`},
		{"file-as-dir", []entry{{name: "web/web.cue/x.cue", body: "package x\n"}}, `entry "web/web.cue/x.cue": inside "web/web.cue", which is a file`},
		{"nul", []entry{{name: "web/a\x00.cue", body: "package web\n"}}, `entry "web/a\x00.cue": not a path inside the module`},
		{"long-element", []entry{{name: "web/" + strings.Repeat("e", 256) + ".cue", body: "package web\n"}}, `an element of 260 bytes, more than the 255 a file name may have: refused`},
		{"vendored", []entry{{name: "cue.mod/deps/example.com/lib@v0.1.0/lib.cue", body: "package lib\n"}}, `entry "cue.mod/deps/example.com/lib@v0.1.0/lib.cue": cue.mod/deps is where the operator`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, parent := startHostile(t, hostileZip(t, append(moduleEntries(), tc.bad...)...), source.Options{})
			wantRefused(t, err, tc.want)
			onlyCache(t, parent)
		})
	}
}

// TestHostileArchiveSizes: a module over the limits is refused before a
// file is written: too many entries, a file declared over the file limit
// (a zip bomb: 16 MiB of zeros in 16 KiB), files over the module's total,
// and a file whose header lies about its size (read one byte past the
// limit, never whole).
func TestHostileArchiveSizes(t *testing.T) {
	zeros := strings.Repeat("\x00", 16<<20)
	var bomb bytes.Buffer
	fw, _ := flate.NewWriter(&bomb, flate.BestCompression)
	fw.Write([]byte(zeros))
	fw.Close()
	many := moduleEntries()
	for i := range 60 {
		many = append(many, entry{name: "web/f" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".cue", body: "package web\n"})
	}
	total := moduleEntries()
	for i := range 5 {
		total = append(total, entry{name: "web/pad" + string(rune('a'+i)) + ".cue", body: "package web\n_p: \"" + strings.Repeat("x", 900) + "\"\n"})
	}
	for _, tc := range []struct {
		name    string
		entries []entry
		limits  template.Limits
		want    []string
	}{
		{"count", many, template.Limits{}, []string{"holds 62 entries, more than the 50 a module may: refused before extraction"}},
		{"bomb", append(moduleEntries(), entry{name: "web/bomb.cue", body: zeros}), template.Limits{},
			[]string{"file web/bomb.cue holds 16777216 bytes, more than the 1048576", "refused before extraction"}},
		{"total", total, template.Limits{MaxFileSize: 1024, MaxTotalSize: 1024}, []string{"more than the 4096 bytes a module may", "refused before extraction at web/pad"}},
		{"lying-header", append(moduleEntries(), entry{body: bomb.String(), raw: &zip.FileHeader{Name: "web/lie.cue", Method: zip.Deflate,
			CompressedSize64: uint64(bomb.Len()), UncompressedSize64: 10}}), template.Limits{}, []string{"file web/lie.cue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, parent := startHostile(t, hostileZip(t, tc.entries...), source.Options{Limits: tc.limits, MaxModuleFiles: 50})
			wantRefused(t, err, tc.want...)
			onlyCache(t, parent)
		})
	}
}

// TestHostileArchiveDeep: an archive of entries deeper than a module's file
// may be, or named longer, is refused naming the entry before a file is
// written, whatever its size; the shape (120 entries 32,000
// directories deep, each walked parent by parent) took minutes of CPU.
func TestHostileArchiveDeep(t *testing.T) {
	deep := func(n, depth int) []entry {
		es := moduleEntries()
		for i := range n {
			es = append(es, entry{name: "web/" + strings.Repeat("d/", depth-2) + "f" + string(rune('a'+i%26)) + ".cue", body: "package web\n"})
		}
		return es
	}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    []string
	}{
		{"depth", deep(3, source.MaxEntryDepth+1), []string{`entry "web/d/d/`, "65 path elements deep, more than the 64 a module's file may be: refused"}},
		{"issue-shape", deep(120, 32000), []string{`entry "web/d/d/`, "(63766 bytes)", "a name of 64006 bytes, more than the 1024 a module's file may have: refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, parent := startHostile(t, hostileZip(t, tc.entries...), source.Options{})
			wantRefused(t, err, tc.want...)
			onlyCache(t, parent)
		})
	}
}

// TestRefusedDigestRemembered: an archive refused is not downloaded and
// checked again at every poll while its reference names the same digest;
// a new digest is.
func TestRefusedDigestRemembered(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	reg.PublishZip(t, "example.com/evil", "v0.1.0", hostileZip(t, moduleEntries()...), sourcetest.ModuleFile(hostileMod, nil))
	var blobs atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			blobs.Add(1)
		}
		next.ServeHTTP(w, req)
	})
	s := sourcetest.Open(t, reg.Ref("example.com/evil", "v0"), source.Options{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deep := append(moduleEntries(), entry{name: "web/" + strings.Repeat("d/", source.MaxEntryDepth) + "f.cue", body: "package web\n"})
	reg.PublishZip(t, "example.com/evil", "v0.2.0", hostileZip(t, deep...), sourcetest.ModuleFile(hostileMod, nil))
	var downloads []int32
	for range 3 {
		before := blobs.Load()
		if _, err := s.Poll(ctx); err == nil || !strings.Contains(err.Error(), "path elements deep") || !strings.Contains(err.Error(), "module example.com/evil@v0.2.0 (sha256:") {
			t.Fatalf("Poll = %v, want v0.2.0 refused as too deep", err)
		}
		downloads = append(downloads, blobs.Load()-before)
	}
	if downloads[0] == 0 || downloads[1] != 0 || downloads[2] != 0 {
		t.Errorf("blobs downloaded by three polls of one refused digest: %v, want some then none", downloads)
	}
	if got := s.Serving()[0].Version; got != "v0.1.0" {
		t.Errorf("serving %s, want the last good v0.1.0", got)
	}
	deeper := append(deep, entry{name: "web/x.cue", body: "package web\n"})
	reg.PublishZip(t, "example.com/evil", "v0.3.0", hostileZip(t, deeper...), sourcetest.ModuleFile(hostileMod, nil))
	before := blobs.Load()
	if _, err := s.Poll(ctx); err == nil || !strings.Contains(err.Error(), "module example.com/evil@v0.3.0 (sha256:") {
		t.Fatalf("Poll = %v, want v0.3.0 refused", err)
	}
	if blobs.Load() == before {
		t.Error("a new digest was not downloaded")
	}
}
