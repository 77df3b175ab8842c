package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// CUEVersion is the CUE language version the tests' modules declare.
const CUEVersion = "v0.17.0"

// Module is the cue.mod/module.cue of the tests' own module,
// test.example/t@v0.
var Module = ModuleFile("test.example/t@v0")

// ModuleFile is a cue.mod/module.cue declaring module path at CUEVersion.
func ModuleFile(path string) string {
	return "module: \"" + path + "\"\nlanguage: version: \"" + CUEVersion + "\"\n"
}

// Root is the directory of the project's checkout.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Shipped is the project's templates directory (read only: copy it with
// CopyTemplates to edit it).
func Shipped() string { return filepath.Join(Root(), "templates") }

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Write writes files (slash-separated path below dir: content) under dir,
// creating the directories they need.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		Must(t, os.WriteFile(p, []byte(data), 0o644))
	}
}

// Dir is a new directory that the test owns, holding files (as Write).
func Dir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Write(t, dir, files)
	return dir
}

// NamedDir is a new directory named name that the test owns, holding files
// (as Write).
func NamedDir(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	Write(t, dir, files)
	return dir
}

// Templates is a new directory named templates of the test module (Module
// as cue.mod/module.cue, unless files has its own) holding files (as
// Write).
func Templates(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := NamedDir(t, "templates", map[string]string{"cue.mod/module.cue": Module})
	Write(t, dir, files)
	return dir
}

// Kinds is a new templates directory with the project's cue.mod and one
// package per entry of pkgs (package name: CUE source, written to
// <name>/<name>.cue).
func Kinds(t testing.TB, pkgs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Must(t, os.CopyFS(filepath.Join(dir, "cue.mod"), os.DirFS(filepath.Join(Shipped(), "cue.mod"))))
	for name, src := range pkgs {
		WriteKind(t, dir, name, src)
	}
	return dir
}

// WriteKind writes the kind package <dir>/<pkg>/<pkg>.cue and returns the
// file's path.
func WriteKind(t testing.TB, dir, pkg, src string) string {
	t.Helper()
	Write(t, dir, map[string]string{pkg + "/" + pkg + ".cue": src})
	return filepath.Join(dir, pkg, pkg+".cue")
}

// CopyTemplates copies the project's templates into a directory the test
// may edit, named templates.
//
// The shipped kinds' CRDs are shared by every test of a control plane: a
// test that edits a shipped kind must own its CRD.
func CopyTemplates(t testing.TB) string {
	t.Helper()
	return CopyDir(t, Shipped())
}

// CopyDir copies the directory src into a new directory the test may edit,
// of the same name.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v: %s", src, err, out)
	}
	return dst
}

// Read is the content of the file at the slash-separated path name below
// dir.
func Read(t testing.TB, dir, name string) string {
	t.Helper()
	return ReadFile(t, filepath.Join(dir, filepath.FromSlash(name)))
}

// Remove removes the file or directory at the slash-separated path name
// below dir, which must exist.
func Remove(t testing.TB, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	_, err := os.Lstat(p)
	Must(t, err)
	Must(t, os.RemoveAll(p))
}

// ReadFile is the content of the file p.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	Must(t, err)
	return string(data)
}

// EditFile rewrites the file p with edit applied, atomically, as an editor
// saves; it fails the test when edit changes nothing (the edit no longer
// matches the file).
func EditFile(t testing.TB, p string, edit func(string) string) {
	t.Helper()
	old := ReadFile(t, p)
	next := edit(old)
	if next == old {
		t.Fatalf("edit of %s changed nothing", p)
	}
	tmp := p + ".tmp"
	Must(t, os.WriteFile(tmp, []byte(next), 0o644))
	Must(t, os.Rename(tmp, p))
}

// Replace is an edit for EditFile that replaces the first old with new.
func Replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}
