package worker

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// limitSelf caps the worker's address space at what it has mapped now
// plus limit: Go reserves about 1.2 GB of address space at start that it
// never touches, so a cap of limit alone would fail the first allocation,
// while this one makes an allocation past the limit fail (Go's fatal "out
// of memory") instead of growing the worker. The garbage collector is told
// to keep the heap well inside it, and the kernel to pick the worker, not
// the operator, should the container run out of memory.
//
// In a -race build only the resident memory is limited (from the operator):
// the race runtime cannot start its shadow mappings under an address space
// limit.
func limitSelf(limit int64) error {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if limit <= 0 || raceEnabled {
		return nil // the race detector's shadow memory needs address space of its own
	}
	vm, err := procStatus(os.Getpid(), "VmSize:")
	if err != nil {
		return fmt.Errorf("address space: %w", err)
	}
	as := uint64(vm + limit + asHeadroom)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("address space limit: %w", err)
	}
	debug.SetMemoryLimit(limit * 3 / 4)
	return nil
}

// asHeadroom is address space beyond the memory limit for what is not
// heap: thread stacks and the runtime's own mappings.
const asHeadroom = 64 << 20
