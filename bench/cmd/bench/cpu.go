package main

import (
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc (100 on Linux).
const clockTicks = 100

// procCPU returns the user+system CPU seconds of process pid, 0 if unknown.
func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces; utime and stime are fields 14 and 15 of the line.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (u + st) / clockTicks
}

// machineCPU returns the busy and total CPU seconds of the machine so far,
// summed over all CPUs (/proc/stat).
func machineCPU() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line := strings.SplitN(string(b), "\n", 2)[0]
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy / clockTicks, total / clockTicks
}

// cpuSnapshot is the CPU time of the machine and of each control plane
// component at one moment.
type cpuSnapshot struct {
	busy, total float64
	procs       map[string]float64
}

func (l *lab) cpuSnapshot() cpuSnapshot {
	s := cpuSnapshot{procs: map[string]float64{}}
	s.busy, s.total = machineCPU()
	for name, pid := range l.cluster.PIDs() {
		s.procs[name] = procCPU(pid)
	}
	return s
}

// cpuUse is the CPU use between two snapshots over wall seconds: the
// machine's busy share (of all CPUs) and each component's cores.
type cpuUse struct {
	Machine float64            // busy fraction of all CPUs, 0..1
	Cores   map[string]float64 // cores used on average, by component
}

// perCR is each component's CPU from a to b in ms per CR of n; nil if
// there is none, or a component is in one snapshot only or its time went
// back (it exited or was restarted between them: procCPU of a gone pid is
// 0, and the difference would be no CPU of it).
func (a cpuSnapshot) perCR(b cpuSnapshot, n int) map[string]float64 {
	if n <= 0 || len(b.procs) == 0 || len(a.procs) != len(b.procs) {
		return nil
	}
	m := map[string]float64{}
	for name, v := range b.procs {
		v0, ok := a.procs[name]
		if !ok || v < v0 {
			return nil
		}
		m[name] = (v - v0) * 1000 / float64(n)
	}
	return m
}

func (a cpuSnapshot) until(b cpuSnapshot, wall float64) cpuUse {
	u := cpuUse{Cores: map[string]float64{}}
	if dt := b.total - a.total; dt > 0 {
		u.Machine = (b.busy - a.busy) / dt
	}
	for name, v := range b.procs {
		u.Cores[name] = (v - a.procs[name]) / wall
	}
	return u
}
