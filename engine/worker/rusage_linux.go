package worker

import (
	"os"
	"syscall"
)

// maxRSS is the peak resident memory of an ended process.
func maxRSS(st *os.ProcessState) int64 {
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}
