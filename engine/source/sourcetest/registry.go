// Package sourcetest runs a real OCI registry on 127.0.0.1 for tests and
// publishes CUE modules to it as `cue mod publish` does.
package sourcetest

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"cuelabs.dev/go/oci/ociregistry/ociclient"
	"cuelabs.dev/go/oci/ociregistry/ocimem"
	"cuelabs.dev/go/oci/ociregistry/ociserver"
	"cuelang.org/go/mod/modregistry"
	"cuelang.org/go/mod/module"
	"cuelang.org/go/mod/modzip"

	"github.com/cueop/cueop/internal/testkit"
)

// Registry is an in-memory OCI registry served over HTTP.
type Registry struct {
	srv *httptest.Server
	mw  atomic.Pointer[Middleware] // Intercept (hostile.go)
}

// Start starts a registry; it stops when the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	r.srv = httptest.NewServer(r.intercepting(ociserver.New(ocimem.New(), nil)))
	t.Cleanup(r.Stop)
	return r
}

// Host is the registry's host:port.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Ref is the reference oci://<host>/<module>@<query>.
func (r *Registry) Ref(mod, query string) string {
	return "oci://" + r.Host() + "/" + mod + "@" + query
}

// Stop stops the registry: every later request fails.
func (r *Registry) Stop() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Publish publishes files (by slash path, cue.mod/module.cue included) as
// module mod (with its major version suffix) at version.
func (r *Registry) Publish(t testing.TB, mod, version string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mv, err := module.NewVersion(mod, version)
	if err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, mv, dir); err != nil {
		t.Fatal(err)
	}
	oc, err := ociclient.New(r.Host(), &ociclient.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := modregistry.NewClient(oc).PutModule(context.Background(), mv, bytes.NewReader(zip.Bytes()), int64(zip.Len())); err != nil {
		t.Fatalf("publish %s@%s: %v", mod, version, err)
	}
}

// ModuleFile is a module file for mod, with deps (module@major: version).
func ModuleFile(mod string, deps map[string]string) string {
	var b strings.Builder
	b.WriteString(testkit.ModuleFile(mod))
	for d, v := range deps {
		b.WriteString("deps: \"" + d + "\": v: \"" + v + "\"\n")
	}
	return b.String()
}

// RedisModule is the project's RedisCluster template (templates/ at
// repo, relative to the test) as the files of module mod.
func RedisModule(t testing.TB, repo, mod string) map[string]string {
	t.Helper()
	files := map[string]string{"cue.mod/module.cue": ModuleFile(mod, nil)}
	dir := filepath.Join(repo, "templates", "rediscluster")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["rediscluster/"+e.Name()] = string(data)
	}
	return files
}
