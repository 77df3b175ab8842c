package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// envCPUProfile, set in the operator's environment, makes each worker
// write a CPU profile of its whole life to worker-<pid>.cpu.pprof in the
// directory it names (make bench sums them by stage). A worker killed
// (over its budget, or with the operator) leaves no profile; one that
// ends as the pool closes does.
const envCPUProfile = "CUEOP_WORKER_CPUPROFILE"

// profileSelf starts the CPU profile dir asks for ("" for none) and
// returns what stops it. A profile that cannot start is said on stderr
// and the worker serves without it.
func profileSelf(dir string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.cpu.pprof", os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cueop worker: no CPU profile:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
