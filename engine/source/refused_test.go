package source_test

import (
	"context"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cueop/cueop/engine/source"
	"github.com/cueop/cueop/engine/source/sourcetest"
)

// TestRefusedVersionReportedOnceNotFetchedAgain: a followed reference
// whose new version is refused at fetch (a symlink entry) keeps serving
// the last version; the refusal is reported once, naming the module
// version, its digest and the entry, and the refused archive is not
// downloaded again at the next polls; a version published after it is
// taken.
func TestRefusedVersionReportedOnceNotFetchedAgain(t *testing.T) {
	ctx := context.Background()
	reg := sourcetest.Start(t)
	reg.PublishZip(t, "example.com/evil", "v0.1.0", hostileZip(t, moduleEntries()...), sourcetest.ModuleFile(hostileMod, nil))
	var mu sync.Mutex
	var refusals []source.Refusal
	ref := reg.Ref("example.com/evil", "v0")
	s := sourcetest.Open(t, ref, source.Options{Refused: func(r source.Refusal) {
		mu.Lock()
		defer mu.Unlock()
		refusals = append(refusals, r)
	}})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var blobs atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, req *http.Request, next http.Handler) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			blobs.Add(1)
		}
		next.ServeHTTP(w, req)
	})
	defer reg.Intercept(nil)

	bad := append(moduleEntries(), entry{name: "web/link.cue", body: "../../../etc/passwd", mode: fs.ModeSymlink | 0o777})
	badDigest := reg.PublishZip(t, "example.com/evil", "v0.1.1", hostileZip(t, bad...), sourcetest.ModuleFile(hostileMod, nil))
	for i := range 3 {
		changed, err := s.Poll(ctx)
		if changed || err == nil || !strings.Contains(err.Error(), "web/link.cue") {
			t.Fatalf("poll %d of a refused version = %v, %v; want it refused naming the entry", i, changed, err)
		}
		if got := s.Serving()[0].Version; got != "v0.1.0" {
			t.Errorf("poll %d: serving %s, want the last good v0.1.0", i, got)
		}
	}
	if n := blobs.Load(); n != 1 {
		t.Errorf("the refused archive was downloaded %d times in 3 polls, want once", n)
	}
	mu.Lock()
	if len(refusals) != 1 {
		t.Fatalf("refusals reported = %+v, want one", refusals)
	}
	r := refusals[0]
	mu.Unlock()
	if r.Module != hostileMod || r.Version != "v0.1.1" || r.Digest != badDigest || r.Ref != ref || !strings.Contains(r.Err.Error(), `entry "web/link.cue"`) {
		t.Errorf("refusal = %+v (%v), want example.com/evil@v0 v0.1.1 %s naming the entry", r, r.Err, badDigest)
	}

	reg.PublishZip(t, "example.com/evil", "v0.1.2", hostileZip(t, moduleEntries()...), sourcetest.ModuleFile(hostileMod, nil))
	if changed, err := s.Poll(ctx); !changed || err != nil {
		t.Fatalf("poll after v0.1.2 = %v, %v", changed, err)
	}
	if got := s.Serving()[0].Version; got != "v0.1.2" {
		t.Errorf("serving %s, want v0.1.2", got)
	}
}
