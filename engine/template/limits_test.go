package template_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/template"
)

// loadWithin loads dir with limits, failing the test when the load does not
// return within a minute (a read blocked on a pipe never would).
func loadWithin(t *testing.T, dir string, limits template.Limits) (*template.Set, error) {
	t.Helper()
	type result struct {
		set *template.Set
		err error
	}
	done := make(chan result, 1)
	go func() {
		set, err := template.LoadWith(dir, template.LoadOptions{Limits: limits})
		done <- result{set, err}
	}()
	select {
	case r := <-done:
		return r.set, r.err
	case <-time.After(time.Minute):
		t.Fatal("the load blocked for a minute")
		return nil, nil
	}
}

// wantRefused fails unless err says each of want.
func wantRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("loaded, want a refusal saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q:\n%v", w, err)
		}
	}
}

const embedGlob = `_files: _ @embed(glob="data/*.txt", type=text)` + "\n" + `_data: "\(len(_files))"` + "\n"

// TestLoadRefusesSpecialFiles: a named pipe, a socket or a device where a
// template file is read (a package file, a file matched by an @embed glob)
// is refused, naming it, and never blocks the load.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		make func(t *testing.T, pkg string) string // returns the file's path
		want string
	}{{
		name: "fifo package file",
		src:  okKind,
		make: func(t *testing.T, pkg string) string { return mkfifo(t, filepath.Join(pkg, "extra.cue")) },
		want: "a named pipe (FIFO), not a regular file: refused",
	}, {
		name: "fifo matched by an embed glob",
		src:  embedKind + embedGlob,
		make: func(t *testing.T, pkg string) string {
			must(t, os.MkdirAll(filepath.Join(pkg, "data"), 0o755))
			must(t, os.WriteFile(filepath.Join(pkg, "data", "a.txt"), []byte("a"), 0o644))
			return mkfifo(t, filepath.Join(pkg, "data", "b.txt"))
		},
		want: "a named pipe (FIFO), not a regular file: refused",
	}, {
		name: "socket package file",
		src:  okKind,
		make: func(t *testing.T, pkg string) string {
			p := filepath.Join(pkg, "extra.cue")
			l, err := net.Listen("unix", p)
			must(t, err)
			t.Cleanup(func() { l.Close() })
			return p
		},
		want: "a socket, not a regular file: refused",
	}, {
		name: "device linked inside as an embedded file",
		src:  embedKind + `_data: _ @embed(file="dev.txt", type=text)` + "\n",
		make: func(t *testing.T, pkg string) string {
			p := filepath.Join(pkg, "dev.txt")
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 0x0105); err != nil { // 1,5: /dev/zero
				t.Skipf("mknod needs privileges: %v", err)
			}
			return p
		},
		want: "a character device, not a regular file: refused",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTemplates(t, map[string]string{"app/app.cue": tc.src, "other/other.cue": otherKind})
			p := tc.make(t, filepath.Join(dir, "app"))
			set, err := loadWithin(t, dir, template.Limits{})
			wantRefused(t, err, "package app: "+p+": "+tc.want)
			wantOnlyOther(t, set)
		})
	}
}

var otherKind = strings.ReplaceAll(okKind, "App", "Other")

// TestLoadNeverOpensAPipeAsADirectory: an @embed glob lists the directory
// part of its pattern (every entry of the package directory, with a
// wildcard there): a named pipe in that place is no directory, as a
// regular file there is not, and the load goes on at once. It was opened
// plainly, which waits for a writer: the compile ran out of its wall-clock
// budget after 40 s and ran on, abandoned, for good, and once
// --render-max-abandoned of them hung the kind's later compiles were
// refused as busy, whatever was edited.
func TestLoadNeverOpensAPipeAsADirectory(t *testing.T) {
	pipe := func(t *testing.T, p string) { mkfifo(t, p) }
	for name, tc := range map[string]struct {
		glob, at string
		make     func(t *testing.T, p string)
	}{
		"in place of the pattern's directory": {"conf.d/*.conf", "conf.d", pipe},
		"among the entries a wildcard lists":  {"*/*.conf", "extra", pipe},
		"in a nested directory":               {"conf/*/*.conf", "conf/extra", pipe},
		"behind a symlink": {"conf.d/*.conf", "conf.d", func(t *testing.T, p string) {
			mkfifo(t, p+".pipe")
			must(t, os.Symlink(filepath.Base(p)+".pipe", p))
		}},
		"a socket": {"conf.d/*.conf", "conf.d", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			must(t, err)
			t.Cleanup(func() { l.Close() })
		}},
	} {
		t.Run(name, func(t *testing.T) {
			src := embedKind + `_files: _ @embed(glob="` + tc.glob + `", type=text, allowEmptyGlob)` + "\n" + `_data: "\(len(_files))"` + "\n"
			dir := writeTemplates(t, map[string]string{"app/app.cue": src, "other/other.cue": otherKind})
			p := filepath.Join(dir, "app", filepath.FromSlash(tc.at))
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			tc.make(t, p)
			start := time.Now()
			set, err := loadWithin(t, dir, template.Limits{})
			if err != nil {
				t.Fatalf("load took %s and failed: %v", time.Since(start).Round(time.Millisecond), err)
			}
			if len(set.Kinds) != 2 {
				t.Errorf("loaded %d kinds, want app and other", len(set.Kinds))
			}
		})
	}
}

// wantOnlyOther fails unless set serves the kind other, loaded beside the
// refused one.
func wantOnlyOther(t *testing.T, set *template.Set) {
	t.Helper()
	if set == nil || len(set.Kinds) != 1 || set.Kinds[0].Name != "other" {
		t.Errorf("the other kind is not served beside the refused one: %+v", set)
	}
}

func mkfifo(t *testing.T, p string) string {
	t.Helper()
	must(t, syscall.Mkfifo(p, 0o644))
	return p
}

// TestLoadRefusesHugeFiles: a file over the size limit is refused by its
// size before it is read: a sparse file of 100 GB costs no read (the test
// would run out of memory), as a package file or embedded.
func TestLoadRefusesHugeFiles(t *testing.T) {
	for name, tc := range map[string]struct{ src, file string }{
		"package file":  {okKind, "app/big.cue"},
		"embedded file": {embedKind + `_data: _ @embed(file="big.txt", type=text)` + "\n", "app/big.txt"},
		"embed glob":    {embedKind + embedGlob, "app/data/big.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTemplates(t, map[string]string{"app/app.cue": tc.src, "other/other.cue": otherKind})
			p := filepath.Join(dir, tc.file)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, nil, 0o644))
			must(t, os.Truncate(p, 100<<30))
			set, err := loadWithin(t, dir, template.Limits{})
			wantRefused(t, err, "package app: "+p+": it holds 107374182400 bytes, more than the 1048576 a template file may hold: refused (raise --template-max-file-size)")
			wantOnlyOther(t, set)
		})
	}
}

// TestLoadFileSizeLimit: a file of exactly the limit loads, one byte more
// is refused, and the refused file loads once the limit is raised.
func TestLoadFileSizeLimit(t *testing.T) {
	src := embedKind + `_data: _ @embed(file="conf.txt", type=text)` + "\n"
	for _, tc := range []struct {
		size   int
		limits template.Limits
		want   string // "" loads
	}{
		{template.DefaultMaxFileSize, template.Limits{}, ""},
		{template.DefaultMaxFileSize + 1, template.Limits{}, "conf.txt: it holds 1048577 bytes, more than the 1048576"},
		{template.DefaultMaxFileSize + 1, template.Limits{MaxFileSize: 2 << 20}, ""},
		{1000, template.Limits{MaxFileSize: 999}, "conf.txt: it holds 1000 bytes, more than the 999"},
	} {
		dir := writeTemplates(t, map[string]string{"app/app.cue": src, "app/conf.txt": strings.Repeat("x", tc.size)})
		set, err := loadWithin(t, dir, tc.limits)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%d bytes, %+v: %v", tc.size, tc.limits, err)
			} else if len(set.Kinds) != 1 {
				t.Errorf("%d bytes, %+v: %d kinds, want 1", tc.size, tc.limits, len(set.Kinds))
			}
			continue
		}
		wantRefused(t, err, tc.want)
	}
}

// TestLoadTotalSizeLimit: the files of one kind together (its package,
// what it embeds and the helper packages it imports) are within the total
// limit; each kind counts alone; raising the limit loads it.
func TestLoadTotalSizeLimit(t *testing.T) {
	lib := `package lib
x: "` + strings.Repeat("y", 300<<10) + `"
`
	src := strings.Replace(embedKind, "package app\n", "package app\nimport \"test.example/t/lib\"\n_l: lib.x\n", 1) +
		`_data: _ @embed(file="conf.txt", type=text)` + "\n"
	files := map[string]string{
		"lib/lib.cue":   lib,
		"app/app.cue":   src,
		"app/conf.txt":  strings.Repeat("x", 800<<10),
		"other/app.cue": otherKind,
	}
	dir := writeTemplates(t, files)
	set, err := loadWithin(t, dir, template.Limits{MaxTotalSize: 1 << 20})
	wantRefused(t, err, "package app: its files hold ", "more than the 1048576 a kind may read: refused (raise --template-max-total-size)")
	wantOnlyOther(t, set)
	if _, err := loadWithin(t, dir, template.Limits{MaxTotalSize: 2 << 20}); err != nil {
		t.Errorf("with the limit raised: %v", err)
	}
}

// TestLoadTotalSizeStopsReading: an embed glob over many files stops
// reading once the package is past the total, naming the file that would
// carry it past.
func TestLoadTotalSizeStopsReading(t *testing.T) {
	files := map[string]string{"app/app.cue": embedKind + embedGlob}
	for _, c := range "abcdefghij" {
		files["app/data/"+string(c)+".txt"] = strings.Repeat("x", 200<<10)
	}
	_, err := loadWithin(t, writeTemplates(t, files), template.Limits{MaxTotalSize: 1 << 20})
	wantRefused(t, err, "app/data/f.txt: its files hold ", "more than the 1048576 a kind may read")
}

// TestLoadTotalSizeListsNoMorePackageFiles: package files beyond the total
// are not read either, and the refusal names the first one past it.
func TestLoadTotalSizeListsNoMorePackageFiles(t *testing.T) {
	files := map[string]string{"app/app.cue": okKind, "other/other.cue": otherKind}
	for _, c := range "abcdef" {
		files["app/x"+string(c)+".cue"] = "package app\n_" + string(c) + ": \"" + strings.Repeat("y", 300<<10) + "\"\n"
	}
	dir := writeTemplates(t, files)
	set, err := loadWithin(t, dir, template.Limits{MaxTotalSize: 1 << 20})
	wantRefused(t, err, "package app: "+filepath.Join(dir, "app/xd.cue")+": its files hold ", "more than the 1048576 a kind may read")
	wantOnlyOther(t, set)
}

// TestLoadCountsParentDirectoryFiles: a file of a kind's package name in a
// parent directory is part of the kind (CUE takes it into the package):
// its edit changes the kind's revision, its bytes count in the total, and
// its refusal refuses the kind (never compiled without it).
func TestLoadCountsParentDirectoryFiles(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"app/app.cue": okKind, "app/big.cue": "package app\n_b: \"" + strings.Repeat("y", 300<<10) + "\"\n"})
	parent := filepath.Join(dir, "parent.cue")
	revision := func(replicas string) string {
		must(t, os.WriteFile(parent, []byte("package app\n#Spec: {replicas: *"+replicas+" | int}\n_p: \""+strings.Repeat("y", 300<<10)+"\"\n"), 0o644))
		set, err := loadWithin(t, dir, template.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return set.Kinds[0].Revision
	}
	if a, b := revision("5"), revision("6"); a == b {
		t.Errorf("parent.cue changed, the kind's revision stayed %s", a)
	}
	_, err := loadWithin(t, dir, template.Limits{MaxTotalSize: 1 << 20 / 2})
	wantRefused(t, err, "package app: its files hold ", "more than the 524288 a kind may read")
	must(t, os.Remove(parent))
	mkfifo(t, parent)
	set, err := loadWithin(t, dir, template.Limits{})
	wantRefused(t, err, "package app: "+parent+": a named pipe (FIFO), not a regular file: refused")
	if set != nil && len(set.Kinds) > 0 {
		t.Errorf("kind %s compiled without its refused parent.cue", set.Kinds[0].Name)
	}
}
