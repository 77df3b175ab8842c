package main

import (
	"os"
	"runtime/pprof"
	"time"
)

// peakProfile writes the heap profile near the peak of the live heap: each
// time the heap's objects exceed the last written peak by 5%, at most every
// 2 s (a profile's inuse figures are those of the last GC).
type peakProfile struct {
	last    uint64
	written time.Time
}

func (p *peakProfile) maybeWrite(file string, alloc uint64) {
	if file == "" || alloc < p.last+p.last/20 || time.Since(p.written) < 2*time.Second {
		return
	}
	p.last, p.written = alloc, time.Now()
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if f.Close() == nil && err == nil {
		_ = os.Rename(tmp, file)
	}
}
