package testkit_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/internal/testkit"
)

// TestTemplatesWritesModuleAndFiles: a templates directory holds the test
// module's module.cue and the files, below directories made for them; a
// file of the map replaces the module.
func TestTemplatesWritesModuleAndFiles(t *testing.T) {
	dir := testkit.Templates(t, map[string]string{"app/app.cue": "package app\n"})
	if filepath.Base(dir) != "templates" {
		t.Errorf("directory %s, want one named templates", dir)
	}
	if got := testkit.Read(t, dir, "cue.mod/module.cue"); got != "module: \"test.example/t@v0\"\nlanguage: version: \"v0.17.0\"\n" {
		t.Errorf("module.cue = %q", got)
	}
	if got := testkit.Read(t, dir, "app/app.cue"); got != "package app\n" {
		t.Errorf("app/app.cue = %q", got)
	}
	own := testkit.Templates(t, map[string]string{"cue.mod/module.cue": testkit.ModuleFile("x.example/y@v1")})
	if got := testkit.Read(t, own, "cue.mod/module.cue"); !strings.HasPrefix(got, `module: "x.example/y@v1"`) {
		t.Errorf("module.cue = %q, want the map's", got)
	}
}

// TestKindsAndCopies: Kinds copies the project's cue.mod beside one
// package per entry; CopyTemplates copies the project's templates, which
// Remove and EditFile then change in the copy alone.
func TestKindsAndCopies(t *testing.T) {
	dir := testkit.Kinds(t, map[string]string{"thing": "package thing\n"})
	if testkit.Read(t, dir, "cue.mod/module.cue") != testkit.Read(t, testkit.Shipped(), "cue.mod/module.cue") {
		t.Error("Kinds has not the project's module.cue")
	}
	if testkit.Read(t, dir, "thing/thing.cue") != "package thing\n" {
		t.Error("Kinds has not written thing/thing.cue")
	}
	cp := testkit.CopyTemplates(t)
	testkit.Remove(t, cp, "webapp")
	if _, err := os.Stat(filepath.Join(cp, "webapp")); !os.IsNotExist(err) {
		t.Errorf("webapp still in the copy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(testkit.Shipped(), "webapp")); err != nil {
		t.Errorf("the project's webapp: %v", err)
	}
	testkit.EditFile(t, filepath.Join(cp, "rediscluster", "rediscluster.cue"), func(s string) string { return s + "// edited\n" })
	if !strings.HasSuffix(testkit.Read(t, cp, "rediscluster/rediscluster.cue"), "// edited\n") {
		t.Error("EditFile did not write the edit")
	}
}

// TestRequestsRecordsEveryRequest: the recorder sees each request of a
// client in order, tells writes from reads, keeps the body of a write and
// the status of each answer.
func TestRequestsRecordsEveryRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	cfg, reqs := testkit.CountRequests(&rest.Config{Host: srv.URL})
	rt, err := rest.TransportFor(cfg)
	testkit.Must(t, err)
	c := &http.Client{Transport: rt}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/pods?watch=true", ""},
		{http.MethodPost, "/api/v1/namespaces/a/pods", `{"kind":"Pod"}`},
		{http.MethodGet, "/api/v1/services", ""},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, strings.NewReader(r.body))
		testkit.Must(t, err)
		resp, err := c.Do(req)
		testkit.Must(t, err)
		resp.Body.Close()
	}
	if reqs.Len() != 3 || reqs.WriteCount() != 1 || reqs.Reads() != 2 {
		t.Fatalf("%d requests, %d writes, %d reads; want 3, 1, 2: %v", reqs.Len(), reqs.WriteCount(), reqs.Reads(), reqs.All())
	}
	w := reqs.Writes(0)
	if got := testkit.Strings(w); len(got) != 1 || got[0] != "POST /api/v1/namespaces/a/pods" {
		t.Errorf("writes %v", got)
	}
	if w[0].Body != `{"kind":"Pod"}` || !w[0].Refused() || reqs.Answered(http.StatusConflict) != 1 {
		t.Errorf("write %+v: want its body and the 409 it was answered", w[0])
	}
	if len(reqs.Writes(1)) != 0 {
		t.Errorf("writes after the first: %v", reqs.Writes(1))
	}
	watches := reqs.Where(testkit.Request.Watch)
	if len(watches) != 1 || watches[0].Resource() != "pods" {
		t.Errorf("watches %v, want the one of pods", watches)
	}
	var cut testkit.Cut
	cut.Store(true)
	if _, err := cut.Wrap(rt).RoundTrip(httptest.NewRequest(http.MethodGet, srv.URL, nil)); err == nil {
		t.Error("a request through a set Cut did not fail")
	}
}
