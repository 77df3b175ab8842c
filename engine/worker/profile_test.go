package worker_test

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/worker"
)

// TestWorkerCPUProfile: with CUEOP_WORKER_CPUPROFILE set, a worker that
// ends as the pool closes has written its whole CPU profile by the time
// Close returns.
func TestWorkerCPUProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUEOP_WORKER_CPUPROFILE", dir)
	k := loadHostile(t)
	p := worker.New(worker.Options{})
	in := render.Inputs{Kind: k, Parent: cr("ns", "a", map[string]any{"line": "ab", "count": int64(3)})}
	if _, err := p.Render(context.Background(), in, render.Options{}); err != nil {
		p.Close()
		t.Fatal(err)
	}
	p.Close()
	files, err := filepath.Glob(filepath.Join(dir, "worker-*.cpu.pprof"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one worker profile in %s, found %v (%v)", dir, files, err)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	n, err := io.Copy(io.Discard, z)
	if err != nil || n == 0 {
		t.Fatalf("%s: a profile cut short or empty: %d bytes, %v", files[0], n, err)
	}
}
