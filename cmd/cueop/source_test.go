package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/source/sourcetest"
)

// TestRenderFromRegistry renders the sample RedisCluster from the
// template published as a module on a real registry, given to --templates
// as a reference in a file.
func TestRenderFromRegistry(t *testing.T) {
	reg := sourcetest.Start(t)
	files := sourcetest.RedisModule(t, "../..", "example.com/redis@v1")
	reg.Publish(t, "example.com/redis@v1", "v1.0.0", files)
	list := filepath.Join(t.TempDir(), "refs")
	if err := os.WriteFile(list, []byte("# the cache templates\n"+reg.Ref("example.com/redis", "v1")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--templates", "@"+list, "--module-cache", t.TempDir(), "render", "-f", "../../config/samples/cache_v1_rediscluster.yaml")
	if err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	if !strings.Contains(out, "kind: Pod") || !strings.Contains(out, "name: sample-2") {
		t.Errorf("render output:\n%s", out)
	}
}
