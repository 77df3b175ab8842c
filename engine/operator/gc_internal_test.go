package operator

import (
	"testing"

	"github.com/cueop/cueop/internal/testkit"
)

// TestCgroupMemoryLimit reads the limit of cgroup v2 and v1 layouts, and
// none where the files say there is none: at the root (a container's own
// cgroup namespace), in the sub-directory /proc/self/cgroup names (a
// service of a host's systemd slice), the lowest of it and the cgroups
// above it, and at the root when the directory named is not mounted (a
// v1 container that sees only its own cgroup).
func TestCgroupMemoryLimit(t *testing.T) {
	const service = "0::/system.slice/cueop.service\n"
	const v1Nested = "5:cpu,cpuacct:/\n4:memory:/kubepods/pod1/ctr\n0::/\n"
	for _, c := range []struct {
		name, self string
		files      map[string]string
		want       int64
		ok         bool
	}{
		{"v2 limited", "0::/\n", map[string]string{"memory.max": "536870912\n"}, 512 << 20, true},
		{"v2 unlimited", "0::/\n", map[string]string{"memory.max": "max\n"}, 0, false},
		{"v1 limited", "", map[string]string{"memory/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, true},
		{"v1 unlimited", "", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"no cgroup files", "", nil, 0, false},
		{"v2 systemd service", service, map[string]string{
			"system.slice/memory.max": "max\n", "system.slice/cueop.service/memory.max": "268435456\n"}, 256 << 20, true},
		{"v2 slice lower than the service", service, map[string]string{
			"system.slice/memory.max": "134217728\n", "system.slice/cueop.service/memory.max": "268435456\n"}, 128 << 20, true},
		{"v1 nested", v1Nested, map[string]string{
			"memory/memory.limit_in_bytes":                   "9223372036854771712\n",
			"memory/kubepods/pod1/ctr/memory.limit_in_bytes": "402653184\n"}, 384 << 20, true},
		{"v1 own cgroup mounted at the root", v1Nested, map[string]string{
			"memory/memory.limit_in_bytes": "402653184\n"}, 384 << 20, true},
	} {
		root := testkit.Dir(t, c.files)
		if got, ok := CgroupMemoryLimit(root, c.self); got != c.want || ok != c.ok {
			t.Errorf("%s: CgroupMemoryLimit = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
