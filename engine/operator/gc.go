package operator

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// DefaultGCPercent is the garbage collector's target (GOGC) that cueop run
// sets unless $GOGC says otherwise. A reconcile allocates far more than it
// keeps (a render's CUE values, the objects decoded from the API server's
// answers): with Go's default of 100 the heap peaks at about twice what is
// live. 50 trades a little CPU for a much lower peak heap and RSS
// (docs/benchmarks.md has the figures).
const DefaultGCPercent = 50

// TuneGC sets DefaultGCPercent when $GOGC is unset, and, when $GOMEMLIMIT
// is unset and the process runs in a cgroup with a memory limit (a
// container's resources.limits.memory), a soft memory limit of
// MemoryLimitShare of it: near the limit the garbage collector runs more
// often rather than let the heap's slack take the container past it. It
// returns the percentage in effect.
func TuneGC() int {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); !ok || v == "" {
		self, _ := os.ReadFile("/proc/self/cgroup")
		if limit, ok := CgroupMemoryLimit("/sys/fs/cgroup", string(self)); ok {
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

// CgroupMemoryLimit is the memory limit of this process's cgroup under
// the cgroup file system mounted at root: the lowest of cgroup v2's
// memory.max (else v1's memory/memory.limit_in_bytes) of the cgroup that
// self (the content of /proc/self/cgroup) names and of each cgroup above
// it. A container with its own cgroup namespace sees its cgroup at root
// (self names "/"); a service of a host's systemd slice, or a container
// that shares the host's namespace, sees the host's tree, where the limit
// is in the sub-directory self names (or in a slice above it). A cgroup
// directory that is not there (the mount shows only the container's own
// cgroup) is passed over. False when no cgroup has a limit ("max", or
// v1's value for no limit).
func CgroupMemoryLimit(root, self string) (int64, bool) {
	v2, v1 := cgroupPaths(self)
	if limit, ok := lowestLimit(root, v2, "memory.max"); ok {
		return limit, true
	}
	return lowestLimit(filepath.Join(root, "memory"), v1, "memory.limit_in_bytes")
}

// cgroupPaths are the cgroup v2 path and the v1 memory controller's path
// that self (/proc/self/cgroup) names; "/" for each it does not name.
func cgroupPaths(self string) (v2, v1 string) {
	v2, v1 = "/", "/"
	for _, line := range strings.Split(self, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1 = parts[2]
		}
	}
	return v2, v1
}

// lowestLimit is the lowest limit in the file name of the directory path
// under dir and of each directory above it, up to dir.
func lowestLimit(dir, path, name string) (int64, bool) {
	var lowest int64
	found := false
	for p := filepath.Clean("/" + path); ; p = filepath.Dir(p) {
		if n, ok := readLimit(filepath.Join(dir, p, name)); ok && (!found || n < lowest) {
			lowest, found = n, true
		}
		if p == "/" {
			return lowest, found
		}
	}
}

// readLimit is the limit in the file f; false when f is not there or says
// there is none.
func readLimit(f string) (int64, bool) {
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	// v1 says "no limit" with the largest page-aligned int64.
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
