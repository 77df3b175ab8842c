package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// `cueop vet` renders specs at the schema's limits, which a template may not
// survive: CUE cannot stop an evaluation, and one allocation beyond the
// machine's memory is a fatal error no Go code can recover. So the trials
// run in a child process, this binary re-executed with trialEnv set, under
// an address space limit: whatever a trial does, vet survives and names the
// trial. The child loads the templates once, renders one trial per line of
// its standard input, answers one line each, and exits after a trial over
// budget (its evaluation runs on abandoned, and would be charged to the
// next trial); the parent starts another for the trials left.

// trialEnv marks the child process.
const trialEnv = "CUEOP_VET_TRIAL"

// trialSetup is the child's first line: what the parent's flags say.
type trialSetup struct {
	Templates     string
	Kind          string
	Budget        budget.Budget
	Limits        template.Limits
	AllowedKinds  string
	ReadableKinds string
	// AddressSpace is the child's RLIMIT_AS in bytes; 0: none.
	AddressSpace uint64
}

// trial is one render to try.
type trial struct {
	Parent     map[string]any
	Referenced []map[string]any
}

// trialResult is the child's answer: Outcome "ok", "budget" (out of the
// render budget, or more children than the budget allows) or "refused"
// (any other error: the spec is refused, which proves nothing); the
// parent adds "died" and "timeout".
type trialResult struct {
	Outcome string
	Error   string
}

// trialMain runs the child when this process is one; it never returns then.
func trialMain() {
	if os.Getenv(trialEnv) == "" {
		return
	}
	if err := serveTrials(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cueop vet trial:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveTrials(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	dec.UseNumber()
	var setup trialSetup
	if err := dec.Decode(&setup); err != nil {
		return err
	}
	if setup.AddressSpace > 0 {
		lim := syscall.Rlimit{Cur: setup.AddressSpace, Max: setup.AddressSpace}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			return fmt.Errorf("address space limit: %w", err)
		}
	}
	k, opts, err := setup.load()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for {
		var tr trial
		if err := dec.Decode(&tr); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		res := runTrial(k, tr, opts)
		if err := enc.Encode(res); err != nil || res.Outcome == "budget" {
			return err
		}
	}
}

func (s trialSetup) load() (*template.Kind, render.Options, error) {
	set, err := template.LoadWith(s.Templates, template.LoadOptions{Budget: s.Budget, Limits: s.Limits})
	if set == nil {
		return nil, render.Options{}, err
	}
	var k *template.Kind
	for _, c := range set.Kinds {
		if c.Name == s.Kind {
			k = c
		}
	}
	if k == nil {
		return nil, render.Options{}, fmt.Errorf("kind %s: not loaded: %v", s.Kind, err)
	}
	allowed, err := render.ParseKindSet(s.AllowedKinds)
	if err != nil {
		return nil, render.Options{}, err
	}
	readable, err := render.ParseKindSet(s.ReadableKinds)
	return k, render.Options{AllowedKinds: allowed, ReadableKinds: readable, Budget: s.Budget}, err
}

func runTrial(k *template.Kind, tr trial, opts render.Options) trialResult {
	refs := make([]*unstructured.Unstructured, len(tr.Referenced))
	for i, r := range tr.Referenced {
		refs[i] = &unstructured.Unstructured{Object: jsonNumbers(r).(map[string]any)}
	}
	parent := &unstructured.Unstructured{Object: jsonNumbers(tr.Parent).(map[string]any)}
	_, err := golden.RenderCase(k, parent, nil, refs, opts)
	var rerr *render.Error
	switch {
	case err == nil:
		return trialResult{Outcome: "ok"}
	case errors.As(err, &rerr) && rerr.Reason == wellknown.ReasonRenderBudget,
		errors.As(err, &rerr) && rerr.Reason == wellknown.ReasonChildRefused && strings.Contains(err.Error(), "render budget"):
		return trialResult{Outcome: "budget", Error: err.Error()}
	}
	return trialResult{Outcome: "refused", Error: err.Error()}
}

// jsonNumbers turns the json.Numbers of v into int64 or float64, as
// unstructured objects hold them (CUE does not unify a float with int).
func jsonNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = jsonNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = jsonNumbers(e)
		}
	}
	return v
}

// trialRunner runs trials in child processes, starting one when none runs.
type trialRunner struct {
	setup   trialSetup
	timeout time.Duration // per trial, the child's start included; 0: none
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  *bytes.Buffer
}

func newTrialRunner(setup trialSetup) *trialRunner {
	r := &trialRunner{setup: setup}
	if b := setup.Budget.WithDefaults(); b.Time > 0 {
		r.timeout = b.Time*budget.WallFactor + time.Minute
	}
	return r
}

// run tries tr in the running child, or a new one.
func (r *trialRunner) run(tr trial) trialResult {
	if r.cmd == nil {
		if err := r.start(); err != nil {
			return trialResult{Outcome: "died", Error: err.Error()}
		}
	}
	if err := json.NewEncoder(r.in).Encode(tr); err != nil {
		return r.died()
	}
	line := make(chan []byte, 1)
	go func() { b, _ := r.out.ReadBytes('\n'); line <- b }()
	var timeout <-chan time.Time
	if r.timeout > 0 {
		timeout = time.After(r.timeout)
	}
	select {
	case b := <-line:
		var res trialResult
		if json.Unmarshal(b, &res) != nil {
			return r.died()
		}
		if res.Outcome == "budget" {
			r.stop()
		}
		return res
	case <-timeout:
		r.stop()
		return trialResult{Outcome: "timeout", Error: fmt.Sprintf("the render ran for %s without an answer: killed", r.timeout)}
	}
}

func (r *trialRunner) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r.cmd = exec.Command(exe)
	r.cmd.Env = append(os.Environ(), trialEnv+"=1")
	r.stderr = &bytes.Buffer{}
	r.cmd.Stderr = r.stderr
	if r.in, err = r.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	r.out = bufio.NewReader(out)
	if err := r.cmd.Start(); err != nil {
		r.cmd = nil
		return err
	}
	return json.NewEncoder(r.in).Encode(r.setup)
}

// died stops the child and says how it ended: the line of its standard
// error that says why (a Go runtime's "fatal error: runtime: out of
// memory"), or its exit status.
func (r *trialRunner) died() trialResult {
	state := r.stop()
	for _, l := range strings.Split(r.stderr.String(), "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "cueop vet trial:") || strings.HasPrefix(l, "panic:") {
			return trialResult{Outcome: "died", Error: "the render process died: " + l}
		}
	}
	return trialResult{Outcome: "died", Error: "the render process died (" + state.String() + ")"}
}

// stop ends the child, if any, and returns how it ended.
func (r *trialRunner) stop() *os.ProcessState {
	if r.cmd == nil {
		return nil
	}
	cmd := r.cmd
	r.cmd = nil
	_ = r.in.Close()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return cmd.ProcessState
}

// trialAddressSpace is a trial process's address space limit: room for the
// Go runtime and the loaded templates, and 16 times the render memory
// budget (a render that allocates its budget in one piece is still
// measured; one that asks far more at once fails in the child). None
// without a memory budget.
func trialAddressSpace(b budget.Budget) uint64 {
	if b = b.WithDefaults(); b.Memory <= 0 {
		return 0
	}
	return 2<<30 + 16*uint64(b.Memory)
}
