package operator

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the garbage collector's target (GOGC) that cueop run
// sets unless $GOGC says otherwise. A reconcile allocates far more than it
// keeps (a render's CUE values, the objects decoded from the API server's
// answers): with Go's default of 100 the heap peaks at about twice what is
// live. At 50 the peak heap in use fell from 52 to 32 MiB with 300 converged
// RedisClusters, and peak RSS from 113 to 90 MiB, for about 5% more CPU
// (docs/benchmarks.md).
const DefaultGCPercent = 50

// TuneGC sets DefaultGCPercent when $GOGC is unset, and, when $GOMEMLIMIT
// is unset and the process runs in a cgroup with a memory limit (a
// container's resources.limits.memory), a soft memory limit of
// MemoryLimitShare of it: near the limit the garbage collector runs more
// often rather than let the heap's slack take the container past it. It
// returns the percentage in effect.
func TuneGC() int {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); !ok || v == "" {
		if limit, ok := CgroupMemoryLimit("/sys/fs/cgroup"); ok {
			debug.SetMemoryLimit(limit / 100 * MemoryLimitShare)
		}
	}
	if v := os.Getenv("GOGC"); v != "" {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

// MemoryLimitShare is the percentage of the cgroup's memory limit TuneGC
// gives the Go runtime as its soft limit; the rest is for what is not
// heap (stacks, the runtime's own mappings, the page cache of files read).
const MemoryLimitShare = 85

// CgroupMemoryLimit is the memory limit of the cgroup mounted at root
// (cgroup v2's memory.max, else v1's memory/memory.limit_in_bytes); false
// when there is none ("max", or v1's value for no limit).
func CgroupMemoryLimit(root string) (int64, bool) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		// v1 says "no limit" with the largest page-aligned int64.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
