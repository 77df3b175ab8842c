package main

import (
	"strings"
	"testing"
	"time"
)

// TestIDReportRatios: the ratio table divides identity by shared at each
// point, calls the target met within 5% on time and memory and missed past
// it, and a point with a run that did not converge is not measured.
func TestIDReportRatios(t *testing.T) {
	run := func(mode string, n int, secs float64, rss uint64, err string) idResult {
		return idResult{Mode: mode, N: n, AllReady: time.Duration(secs * float64(time.Second)), PeakRSS: rss << 20,
			Counts: opStatsDelta{Reads: 10, Watches: 10, Writes: int64(n)}, Err: err}
	}
	rep := &idReport{cfg: idConfig{config: config{Runs: 1}, Points: []int{300, 3000, 30}}, runs: []idResult{
		run("identity", 300, 10.4, 104, ""), run("shared", 300, 10, 100, ""),
		run("shared", 3000, 100, 200, ""), run("identity", 3000, 120, 200, ""),
		run("identity", 30, 1, 1, ""), run("shared", 30, 0, 0, "3 of 30 CRs Ready"),
	}}
	md := rep.markdown()
	for _, want := range []string{
		"| 300 | 1.040 | 1.040 | 1.000 | met |",
		"| 3000 | 1.200 | 1.000 | 1.000 | **missed** |",
		"| 30 | – | – | – | not measured (a run did not converge) |",
		"| shared | 30 | **0 of 30 Ready** |",
		"- shared at 30: 3 of 30 CRs Ready",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}
