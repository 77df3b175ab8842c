package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

const appKind = `package web
import "example.com/lib"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: d: lib.greeting + " %s"}
`

func publishApp(t *testing.T, reg *sourcetest.Registry, version string) {
	t.Helper()
	reg.Publish(t, "example.com/app@v1", version, map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/app@v1", map[string]string{"example.com/lib@v0": "v0.1.0"}),
		"web/web.cue":        strings.Replace(appKind, "%s", version, 1),
	})
}

func publishLib(t *testing.T, reg *sourcetest.Registry) {
	reg.Publish(t, "example.com/lib@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/lib@v0", nil),
		"lib.cue":            "package lib\ngreeting: \"hello\"\n",
	})
}

func open(t *testing.T, ref, cache string, limits template.Limits) *source.Source {
	t.Helper()
	return sourcetest.Open(t, ref, source.Options{CacheDir: cache, Limits: limits})
}

func greeting(t *testing.T, dir string) string {
	t.Helper()
	set := templatetest.Load(t, dir)
	if len(set.Kinds) != 1 || set.Kinds[0].Name != "app/web" {
		t.Fatalf("kinds = %v, want app/web", set.Kinds)
	}
	got, _ := set.Kinds[0].Value.LookupPath(cue.ParsePath("children.cm.data.d")).String()
	return got
}

// TestSourceFollowsAndPins: a module and its dependency come from a real
// registry into the cache and load hermetically; a moved query is
// followed; a restart with the registry gone serves the recorded digest.
func TestSourceFollowsAndPins(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	publishApp(t, reg, "v1.0.0")
	cache := t.TempDir()
	s := open(t, reg.Ref("example.com/app", "v1"), cache, template.Limits{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := greeting(t, s.Dir()); got != "hello v1.0.0" {
		t.Errorf("served %q, want hello v1.0.0", got)
	}
	first := s.Serving()[0]
	if !strings.HasPrefix(first.Digest, "sha256:") || len(first.Deps) != 1 || first.Deps[0].Module != "example.com/lib@v0" {
		t.Errorf("resolved %+v", first)
	}
	if changed, err := s.Poll(ctx); changed || err != nil {
		t.Errorf("Poll with nothing new = %v, %v", changed, err)
	}
	publishApp(t, reg, "v1.1.0")
	if changed, err := s.Poll(ctx); !changed || err != nil {
		t.Fatalf("Poll after v1.1.0 = %v, %v", changed, err)
	}
	if got := greeting(t, s.Dir()); got != "hello v1.1.0" {
		t.Errorf("served %q, want hello v1.1.0", got)
	}
	reg.Stop()
	if _, err := s.Poll(ctx); err == nil {
		t.Error("Poll with the registry gone: no error")
	}
	again := open(t, reg.Ref("example.com/app", "v1"), cache, template.Limits{})
	if err := again.Start(ctx); err != nil {
		t.Fatalf("restart with the registry gone: %v", err)
	}
	if got := greeting(t, again.Dir()); got != "hello v1.1.0" {
		t.Errorf("restart served %q, want the recorded hello v1.1.0", got)
	}
}

// TestSourceRefusesOversized: a module with a file over the file limit is
// refused at fetch, naming the module, version and file.
func TestSourceRefusesOversized(t *testing.T) {
	reg := sourcetest.Start(t)
	reg.Publish(t, "example.com/big@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/big@v0", nil),
		"web/web.cue":        "package web\n_pad: \"" + strings.Repeat("x", 4096) + "\"\n",
	})
	s := open(t, reg.Ref("example.com/big", "v0.1.0"), t.TempDir(), template.Limits{MaxFileSize: 1024})
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "module example.com/big@v0.1.0 (sha256:") || !strings.Contains(err.Error(), "web/web.cue") {
		t.Errorf("Start = %v, want the module refused naming its version and file", err)
	}
}

func TestParseRefs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"oci://127.0.0.1:5000/example.com/redis@v1.2.0", "127.0.0.1:5000 example.com/redis v1.2.0  redis"},
		{"oci://r.test/team/example.com/x/redis@v1", "r.test/team example.com/x/redis v1  redis"},
		{"oci://r.test/example.com/redis@v1.2.0@sha256:" + strings.Repeat("a", 64), "r.test example.com/redis v1.2.0 sha256:" + strings.Repeat("a", 64) + " redis"},
	} {
		refs, err := source.ParseRefs(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		r := refs[0]
		if got := strings.Join([]string{r.Registry, r.Module, r.Query, r.Digest, r.Dir()}, " "); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"oci://r.test/example.com/redis", "oci://r.test/redis@v1", "oci://r.test/example.com/redis@v1@sha256:aa",
		"oci://r.test/a.com/redis@v1,oci://r.test/b.com/redis@v1"} {
		if _, err := source.ParseRefs(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestErrorsNameModuleVersions: an error in a module fetched from a
// registry names its files by module path and version, and those of its
// dependencies by theirs, not by where the module cache keeps them.
func TestErrorsNameModuleVersions(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	reg.Publish(t, "example.com/app@v1", "v1.2.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/app@v1", map[string]string{"example.com/lib@v0": "v0.1.0"}),
		"web/web.cue":        strings.Replace(appKind, `lib.greeting + " %s"`, "lib.greeting & 7", 1),
	})
	cache := t.TempDir()
	s := open(t, reg.Ref("example.com/app", "v1.2.0"), cache, template.Limits{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := template.Load(s.Dir())
	if err == nil {
		t.Fatal("a template unifying a string with 7 loaded")
	}
	msg := err.Error()
	for _, want := range []string{"example.com/app@v1.2.0:web/web.cue:6:", "example.com/lib@v0.1.0:lib.cue:2:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, cache) || strings.Contains(msg, "trees") {
		t.Errorf("error names the module cache:\n%s", msg)
	}
}

// TestPinCoversDependencies: a pinned module's dependencies are those its
// first fetch resolved. After the publisher of a dependency moves its tag
// to new content, the warm cache serves the pinned content, and a fetch
// of the pin anew (its module files gone, pinned.json kept) is refused,
// naming the dependency, its version and both digests.
func TestPinCoversDependencies(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	publishApp(t, reg, "v1.0.0")
	probe := open(t, reg.Ref("example.com/app", "v1.0.0"), t.TempDir(), template.Limits{})
	if err := probe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pin := reg.Ref("example.com/app", "v1.0.0@"+probe.Serving()[0].Digest)

	cache := t.TempDir()
	s := open(t, pin, cache, template.Limits{})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := greeting(t, s.Dir()); got != "hello v1.0.0" {
		t.Fatalf("served %q, want hello v1.0.0", got)
	}
	deps := s.Serving()[0].Deps
	if len(deps) != 1 || deps[0].Module != "example.com/lib@v0" {
		t.Fatalf("pin's dependencies = %+v", deps)
	}
	libDigest := deps[0].Digest

	reg.Publish(t, "example.com/lib@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/lib@v0", nil),
		"lib.cue":            "package lib\ngreeting: \"evil\"\n",
	})

	warm := open(t, pin, cache, template.Limits{})
	if err := warm.Start(ctx); err != nil {
		t.Fatalf("warm cache: %v", err)
	}
	if changed, err := warm.Poll(ctx); changed || err != nil {
		t.Errorf("warm cache: Poll of a pin = %v, %v", changed, err)
	}
	if got := greeting(t, warm.Dir()); got != "hello v1.0.0" {
		t.Errorf("warm cache served %q, want the pinned hello v1.0.0", got)
	}

	if err := os.RemoveAll(filepath.Join(cache, "modules")); err != nil {
		t.Fatal(err)
	}
	cold := open(t, pin, cache, template.Limits{})
	err := cold.Start(ctx)
	if err == nil {
		t.Fatalf("module files gone, the dependency's tag moved: Start served %q", greeting(t, cold.Dir()))
	}
	for _, want := range []string{"example.com/lib@v0.1.0", "not " + libDigest, "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v, want it to name %q", err, want)
		}
	}
	if _, found, _ := strings.Cut(err.Error(), "names digest "); !strings.HasPrefix(found, "sha256:") || strings.HasPrefix(found, libDigest) {
		t.Errorf("Start = %v, want it to name the digest found", err)
	}
	p, _ := os.ReadFile(filepath.Join(cache, "pinned.json"))
	if !strings.Contains(string(p), libDigest) {
		t.Errorf("a refused fetch changed pinned.json:\n%s", p)
	}
}

// TestPinOfAnotherVersionsDigest: a pin v1.1.0@<digest of v1.0.0> is
// refused naming both digests, and nothing is served or recorded: it
// would serve v1.0.0's content and report v1.1.0.
func TestPinOfAnotherVersionsDigest(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	publishApp(t, reg, "v1.0.0")
	publishApp(t, reg, "v1.1.0")
	digest := func(version string) string {
		s := open(t, reg.Ref("example.com/app", version), t.TempDir(), template.Limits{})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return s.Serving()[0].Digest
	}
	old, cur := digest("v1.0.0"), digest("v1.1.0")
	cache := t.TempDir()
	s := open(t, reg.Ref("example.com/app", "v1.1.0@"+old), cache, template.Limits{})
	err := s.Start(ctx)
	if err == nil {
		t.Fatalf("pin of v1.0.0's digest as v1.1.0: Start served %q as %s", greeting(t, s.Dir()), s.Serving()[0].Version)
	}
	for _, want := range []string{"tag v1.1.0 of example.com/app names digest " + cur, "not the pinned " + old, "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v, want it to name %q", err, want)
		}
	}
	if p, err := os.ReadFile(filepath.Join(cache, "pinned.json")); err == nil && strings.Contains(string(p), old) {
		t.Errorf("a refused pin was recorded:\n%s", p)
	}
	good := open(t, reg.Ref("example.com/app", "v1.1.0@"+cur), t.TempDir(), template.Limits{})
	if err := good.Start(ctx); err != nil {
		t.Fatalf("pin of v1.1.0's own digest: %v", err)
	}
	if got := greeting(t, good.Dir()); got != "hello v1.1.0" {
		t.Errorf("served %q, want hello v1.1.0", got)
	}
}
