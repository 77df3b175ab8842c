package operator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupMemoryLimit reads the limit of cgroup v2 and v1 layouts, and
// none where the files say there is none.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name, file, content string
		want                int64
		ok                  bool
	}{
		{"v2 limited", "memory.max", "536870912\n", 512 << 20, true},
		{"v2 unlimited", "memory.max", "max\n", 0, false},
		{"v1 limited", "memory/memory.limit_in_bytes", "1073741824\n", 1 << 30, true},
		{"v1 unlimited", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0, false},
		{"no cgroup files", "", "", 0, false},
	} {
		root := t.TempDir()
		if c.file != "" {
			p := filepath.Join(root, c.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok := CgroupMemoryLimit(root); got != c.want || ok != c.ok {
			t.Errorf("%s: CgroupMemoryLimit = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
