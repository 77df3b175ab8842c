package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// benchSamples are the samples of one Go benchmark, one per -count.
type benchSamples struct {
	NsOp, BOp, AllocsOp []float64
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) B/op\s+([\d.]+) allocs/op`)

// runGoBench runs BenchmarkRender of package bench -count times and returns
// the samples by benchmark name (e.g. "BenchmarkRender/cueop/replicas=3").
func runGoBench(ctx context.Context, count int) (map[string]*benchSamples, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkRender$", "-benchmem",
		"-count", strconv.Itoa(count), "./bench/")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench: %w\n%s", err, out.String())
	}
	return parseGoBench(out.String()), nil
}

func parseGoBench(out string) map[string]*benchSamples {
	res := map[string]*benchSamples{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s := res[m[1]]
		if s == nil {
			s = &benchSamples{}
			res[m[1]] = s
		}
		f := func(x string) float64 { v, _ := strconv.ParseFloat(x, 64); return v }
		s.NsOp = append(s.NsOp, f(m[2]))
		s.BOp = append(s.BOp, f(m[3]))
		s.AllocsOp = append(s.AllocsOp, f(m[4]))
	}
	return res
}

// median of xs (not modified); 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// spread returns min and max of xs.
func spread(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
