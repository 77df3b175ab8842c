package source_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
	"github.com/cueop/cueop/engine/template"
)

// ourGoroutines lists the goroutines running this package's code or the
// registry client's, but the test's own.
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "engine/source_test.") {
			continue
		}
		if strings.Contains(g, "cueop/engine/source.") || strings.Contains(g, "ociregistry/ociclient.") || strings.Contains(g, "mod/modregistry.") {
			out = append(out, g)
		}
	}
	return out
}

// TestHangingRegistry: a registry that accepts a connection and never
// answers, or trickles bytes, fails the fetch within FetchTimeout naming
// the registry; the last good version keeps serving; Run returns when
// cancelled with a request hanging, and leaves no goroutine behind.
func TestHangingRegistry(t *testing.T) {
	ctx := context.Background()
	t.Run("never-answers", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c) // held, never read nor answered
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
		s := sourcetest.Open(t, "oci://"+ln.Addr().String()+"/example.com/app@v1", source.Options{FetchTimeout: 300 * time.Millisecond})
		start := time.Now()
		err = s.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "registry "+ln.Addr().String()+" did not answer within 300ms") {
			t.Errorf("Start = %v, want the registry named as not answering", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Start took %s", d)
		}
	})
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	publishApp(t, reg, "v1.0.0")
	s := sourcetest.Open(t, reg.Ref("example.com/app", "v1"), source.Options{FetchTimeout: 300 * time.Millisecond})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	publishApp(t, reg, "v1.1.0")
	for name, mw := range map[string]sourcetest.Middleware{"hangs": sourcetest.Hang(nil), "trickles": sourcetest.Trickle(20 * time.Millisecond)} {
		t.Run(name, func(t *testing.T) {
			reg.Intercept(mw)
			defer reg.Intercept(nil)
			if _, err := s.Poll(ctx); err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
				t.Errorf("Poll = %v, want a timeout naming the registry", err)
			}
			if got := greeting(t, s.Dir()); got != "hello v1.0.0" {
				t.Errorf("served %q, want the last good hello v1.0.0", got)
			}
		})
	}
	t.Run("run-cancelled", func(t *testing.T) {
		s := sourcetest.Open(t, reg.Ref("example.com/app", "v1"), source.Options{FetchTimeout: time.Hour, PollInterval: time.Hour})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hanging := make(chan string, 1)
		reg.Intercept(sourcetest.Hang(hanging))
		defer reg.Intercept(nil)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { s.Run(runCtx); close(done) }()
		<-hanging
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
		if gs := ourGoroutines(); len(gs) > 0 {
			t.Errorf("goroutines left after Run returned:\n%s", strings.Join(gs, "\n\n"))
		}
	})
	if changed, err := s.Poll(ctx); !changed || err != nil {
		t.Errorf("Poll with the registry back = %v, %v; want v1.1.0", changed, err)
	}
}

// TestPinAndDigests: a tag moved to another digest is followed; a pinned
// digest is never left, at a poll or at a start on a new cache with the
// pin's record (without one, the moved tag refuses the pin); a registry
// that serves another manifest for the pinned digest, or another archive
// for the manifest's, is refused naming the module.
func TestPinAndDigests(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	publishLib(t, reg)
	publishApp(t, reg, "v1.0.0")
	tag := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0"), source.Options{})
	if err := tag.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pin := tag.Serving()[0].Digest
	pinnedCache := t.TempDir()
	pinned := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0@"+pin), source.Options{CacheDir: pinnedCache})
	if err := pinned.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The tag moves: v1.0.0 republished with other content.
	reg.Publish(t, "example.com/app@v1", "v1.0.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/app@v1", map[string]string{"example.com/lib@v0": "v0.1.0"}),
		"web/web.cue":        strings.Replace(appKind, "%s", "moved", 1),
	})
	if changed, err := tag.Poll(ctx); !changed || err != nil || tag.Serving()[0].Digest == pin {
		t.Errorf("tag Poll = %v, %v, %s; want the moved tag followed", changed, err, tag.Serving()[0].Digest)
	}
	if got := greeting(t, tag.Dir()); got != "hello moved" {
		t.Errorf("tag served %q, want hello moved", got)
	}
	if changed, err := pinned.Poll(ctx); changed || err != nil {
		t.Errorf("pinned Poll = %v, %v; want nothing", changed, err)
	}
	moved := tag.Serving()[0].Digest
	// A pin no record holds, whose tag names another digest, is refused
	// naming both: it cannot be told from a pin of another version's digest.
	unrecorded := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0@"+pin), source.Options{})
	if err := unrecorded.Start(ctx); err == nil || !strings.Contains(err.Error(), "names digest "+moved+", not the pinned "+pin) {
		t.Errorf("Start of a pin whose tag moved, with no record = %v, want it refused naming both digests", err)
	}
	// A recorded pin (a new module cache, the record kept) is served.
	recorded := func() string { // a new module cache holding the pin's record
		dir := t.TempDir()
		rec, err := os.ReadFile(filepath.Join(pinnedCache, "pinned.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pinned.json"), rec, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	fresh := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0@"+pin), source.Options{CacheDir: recorded()})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*source.Source{pinned, fresh} {
		if got := greeting(t, s.Dir()); got != "hello v1.0.0" || s.Serving()[0].Digest != pin {
			t.Errorf("pinned served %q %s, want hello v1.0.0 %s", got, s.Serving()[0].Digest, pin)
		}
	}
	hex := func(d string) string { return strings.TrimPrefix(d, "sha256:") }
	t.Run("manifest-mismatch", func(t *testing.T) {
		reg.Intercept(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
			req.URL.Path = strings.Replace(req.URL.Path, hex(pin), hex(moved), 1)
			next.ServeHTTP(w, req)
		})
		defer reg.Intercept(nil)
		s := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0@"+pin), source.Options{})
		err := s.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "module example.com/app@v1.0.0 ("+pin+")") {
			t.Errorf("Start = %v, want the pinned module refused", err)
		}
		t.Log(err)
	})
	t.Run("archive-mismatch", func(t *testing.T) {
		reg.Intercept(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
			if strings.Contains(req.URL.Path, "/blobs/") {
				w.Header().Set("Content-Type", "application/zip")
				w.Write([]byte("PK not the archive"))
				return
			}
			next.ServeHTTP(w, req)
		})
		defer reg.Intercept(nil)
		s := sourcetest.Open(t, reg.Ref("example.com/app", "v1.0.0@"+pin), source.Options{CacheDir: recorded()})
		err := s.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "module example.com/app@v1.0.0 ("+pin+")") {
			t.Errorf("Start = %v, want the module refused", err)
		}
		t.Log(err)
		if entries, _ := os.ReadDir(filepath.Join(s.Dir(), "..", "modules", "sha256")); len(entries) != 0 {
			t.Errorf("extracted: %v", entries)
		}
	})
}

// TestHostileDependencies: dependencies in a cycle (a needs b needs a)
// resolve as CUE's minimal version selection does, without a hang; a
// dependency whose module file names another module is refused naming it.
func TestHostileDependencies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := sourcetest.Start(t)
	reg.Publish(t, "example.com/a@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/a@v0", map[string]string{"example.com/b@v0": "v0.1.0"}),
		"web/web.cue": `package web
import "example.com/b"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: d: b.greeting}
`,
	})
	reg.Publish(t, "example.com/b@v0", "v0.1.0", map[string]string{
		"cue.mod/module.cue": sourcetest.ModuleFile("example.com/b@v0", map[string]string{"example.com/a@v0": "v0.1.0"}),
		"b.cue":              "package b\ngreeting: \"cycle\"\n",
	})
	s := sourcetest.Open(t, reg.Ref("example.com/a", "v0.1.0"), source.Options{})
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start with a dependency cycle: %v", err)
	}
	set, err := template.Load(s.Dir())
	if err != nil || len(set.Kinds) != 1 {
		t.Fatalf("Load = %v, %v", set, err)
	}

	reg.PublishZip(t, "example.com/lib", "v0.1.0", hostileZip(t,
		entry{name: "cue.mod/module.cue", body: sourcetest.ModuleFile("example.com/other@v0", nil)},
		entry{name: "lib.cue", body: "package lib\ngreeting: \"hi\"\n"}), sourcetest.ModuleFile("example.com/lib@v0", nil))
	publishApp(t, reg, "v1.0.0")
	app := sourcetest.Open(t, reg.Ref("example.com/app", "v1"), source.Options{})
	err = app.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "module example.com/lib@v0.1.0 (sha256:") || !strings.Contains(err.Error(), "names module example.com/other@v0, not example.com/lib@v0") {
		t.Errorf("Start = %v, want the dependency refused for naming another module", err)
	}
}

// TestUnwritableCache: a module cache that cannot be written is refused
// when the Source is made, naming the directory.
func TestUnwritableCache(t *testing.T) {
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // root writes through modes: a read-only bind mount
		if err := syscall.Mount(cache, cache, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(cache, 0) })
		if err := syscall.Mount("", cache, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			t.Skipf("read-only remount: %v", err)
		}
	} else {
		os.Chmod(filepath.Join(cache, "modules"), 0o555)
		os.Chmod(cache, 0o555)
		t.Cleanup(func() { os.Chmod(cache, 0o755); os.Chmod(filepath.Join(cache, "modules"), 0o755) })
	}
	refs, _ := source.ParseRefs("oci://127.0.0.1:1/example.com/app@v1")
	_, err := source.New(source.Options{Refs: refs, CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "module cache "+cache+": not writable") {
		t.Errorf("New = %v, want the cache named as not writable", err)
	}
}

// TestCredentialsNotInErrors: a registry refusing the credentials of the
// registry config gets an error that holds neither the password nor its
// encoding.
func TestCredentialsNotInErrors(t *testing.T) {
	reg := sourcetest.Start(t)
	const secret = "s3cr3t-Pa55"
	auth := base64.StdEncoding.EncodeToString([]byte("user:" + secret))
	reg.Intercept(func(w http.ResponseWriter, req *http.Request, _ http.Handler) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"denied"}]}`))
	})
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"auths":{"`+reg.Host()+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sourcetest.Open(t, reg.Ref("example.com/app", "v1"), source.Options{RegistryConfig: cfg})
	err := s.Start(context.Background())
	if err == nil {
		t.Fatal("Start with refused credentials: no error")
	}
	t.Log(err)
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), auth) {
		t.Errorf("error leaks the credentials: %v", err)
	}
}

// TestEndlessAnswer: a registry whose tag list never ends is cut off at
// the bytes a module may need, not read until memory runs out.
func TestEndlessAnswer(t *testing.T) {
	reg := sourcetest.Start(t)
	reg.Intercept(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
		if !strings.HasSuffix(req.URL.Path, "/tags/list") {
			next.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"name":"example.com/app","tags":[`))
		chunk := []byte(strings.Repeat(`"v1.0.0",`, 1000))
		for req.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s := sourcetest.Open(t, reg.Ref("example.com/app", "v1"), source.Options{FetchTimeout: time.Hour, Limits: template.Limits{MaxFileSize: 1024, MaxTotalSize: 1024}})
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the registry's answer runs past the bytes a module may need") {
		t.Errorf("Start = %v, want the endless answer cut off", err)
	}
}
