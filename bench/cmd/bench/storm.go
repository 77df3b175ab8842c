package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// stormRun is the retry-storm test of package engine/operator
// (TestNoRetryStorm), run by the driver during the idle period: it starts a
// control plane of its own and holds stuck CRs for BENCH_STORM.
type stormRun struct {
	start time.Time
	done  chan stormResult
}

// stormResult is how the retry-storm test ended.
type stormResult struct {
	Duration time.Duration // the test's hold time (BENCH_STORM)
	Elapsed  time.Duration // the whole `go test`
	Passed   bool
	Line     string // the test's own summary line
	Log      string
}

var stormLine = regexp.MustCompile(`storm_test\.go:\d+: (.*)`)

func (r stormResult) summary() string {
	verdict := "FAILED"
	if r.Passed {
		verdict = "passed"
	}
	return fmt.Sprintf("%s in %s: %s (log %s)", verdict, r.Elapsed.Round(time.Second), r.Line, r.Log)
}

// startStorm starts the retry-storm test unless BENCH_STORM is 0.
func (c *comparison) startStorm(ctx context.Context) *stormRun {
	if c.cfg.Storm == 0 {
		return nil
	}
	r := &stormRun{start: time.Now(), done: make(chan stormResult, 1)}
	log := filepath.Join(c.cfg.Out, "storm.log")
	c.logf("retry storm: TestNoRetryStorm with CUEOP_STORM_DURATION=%s, beside the idle operators", c.cfg.Storm)
	go func() {
		cmd := exec.CommandContext(ctx, c.stormBin, "-test.count=1", "-test.run=^TestNoRetryStorm$", "-test.v")
		cmd.Dir = filepath.Join("engine", "operator") // the test reads ../../templates
		cmd.Env = append(os.Environ(), "CUEOP_STORM_DURATION="+c.cfg.Storm.String())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		_ = os.WriteFile(log, out.Bytes(), 0o644)
		res := stormResult{Duration: c.cfg.Storm, Elapsed: time.Since(r.start), Passed: err == nil, Log: log}
		if m := stormLine.FindSubmatch(out.Bytes()); m != nil {
			res.Line = string(m[1])
		} else {
			res.Line = "no summary line"
		}
		r.done <- res
	}()
	return r
}

// buildStorm compiles the test binary of package engine/operator, at the
// start of the run: the tree may be edited meanwhile.
func (c *comparison) buildStorm(ctx context.Context) error {
	if c.cfg.Storm == 0 {
		return nil
	}
	bin, err := filepath.Abs(filepath.Join(c.tmp, "operator.test"))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./engine/operator/")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the retry-storm test: %w\n%s", err, out)
	}
	c.stormBin = bin
	return nil
}

func (r *stormRun) wait() stormResult { return <-r.done }
