package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReadmeTour runs the tour of README.md as a reader does, in a copy of
// the repository (its files git does not ignore, edits included), so that
// what the tour writes and edits (mine.yaml, the RedisCluster template)
// stays out of the checkout. Every ```sh block of README.md runs: the one
// opened with ```sh background (make run) in the background, and once it
// printed every line README.md shows after it, the others in order in one
// bash (-euo pipefail), as in another terminal. Each line shown in a
// ```text block after a block must be a line that block printed: `...`
// stands for any text, and times (15:44:11), durations and ages (3.9s,
// 2m10s) and revision hashes (revision=da5babc607) match any. kubectl is
// the reader's, from PATH; the control-plane binaries come from
// CUEOP_K8S_BIN_DIR (or the default cache, as for make run). make run and
// its control plane are stopped before the test returns.
func TestReadmeTour(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("the tour needs kubectl on PATH: %v", err)
	}
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := runBlocks(string(data))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if !blocks[0].background || len(blocks) < 2 {
		t.Fatalf("README.md: the tour's first block (line %d) must be ```sh background (make run), and commands must follow it", blocks[0].line)
	}
	for _, b := range blocks[1:] {
		if b.background {
			t.Fatalf("README.md:%d: only the tour's first block runs in the background", b.line)
		}
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "cueop")
	copyCheckout(t, repo, dir)
	env := append(os.Environ(),
		// Nothing before the tour's own export reaches a cluster of the
		// reader's; kubectl's discovery cache stays out of $HOME.
		"KUBECONFIG="+filepath.Join(tmp, "no-kubeconfig"),
		"KUBECACHEDIR="+filepath.Join(tmp, "kube-cache"),
	)
	// Within go test's -timeout (10 minutes by default), leaving a minute
	// to stop make run and say what failed.
	deadline := time.Now().Add(12 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-time.Minute).Before(deadline) {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()

	bg := startBackground(t, blocks[0], dir, env)
	select {
	case <-bg.shown:
		t.Logf("README.md:%d printed the lines shown in %s", blocks[0].line, time.Since(start).Round(100*time.Millisecond))
	case <-bg.gone:
		t.Fatalf("README.md:%d exited before printing the lines shown; missing:\n\t%s\nit printed:\n%s%s", blocks[0].line,
			strings.Join(bg.missing(), "\n\t"), bg.output(), devLogTail(dir))
	case <-ctx.Done():
		t.Fatalf("README.md:%d did not print the lines shown within %s; missing:\n\t%s\nit printed:\n%s%s", blocks[0].line,
			time.Since(start).Round(time.Second), strings.Join(bg.missing(), "\n\t"), bg.output(), devLogTail(dir))
	}

	script, lines := tutorialScript(blocks[1:])
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var transcript bytes.Buffer
	cmd.Stdout, cmd.Stderr = &transcript, &transcript
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	out := transcript.String()
	bg.stop()
	t.Logf("the tour ran in %s", time.Since(start).Round(100*time.Millisecond))
	if runErr != nil {
		line, block := lastBlock(out)
		if failed := failedLine(out, lines); failed > 0 {
			line = fmt.Sprintf("%d (the block of line %s)", failed, line)
		}
		t.Fatalf("README.md:%s failed (%v; %v):\n%s%s", line, runErr, ctx.Err(), block, devLogTail(dir))
	}
	if testing.Verbose() {
		t.Logf("make run printed:\n%s\nthe other blocks:\n%s", bg.output(), out)
	}
	printed := map[int]string{} // by block line
	for _, part := range strings.Split(out, blockMarker)[1:] {
		var n int
		if _, err := fmt.Sscanf(part, "%d", &n); err == nil {
			printed[n] = part
		}
	}
	for _, b := range blocks[1:] {
		for _, w := range b.want {
			if !printsLoose(printed[b.line], w.text) {
				t.Errorf("README.md:%d: the block of line %d did not print\n\t%s\nit printed:\n%s", w.line, b.line, w.text, printed[b.line])
			}
		}
	}
}

// background is the tour's block run in the background (make run): its
// output, and whether it printed the lines README.md shows after it.
type background struct {
	t     *testing.T
	block shBlock
	pgid  int
	shown chan struct{} // closed once every line shown was printed
	gone  chan struct{} // closed once the block and every process it started exited
	once  sync.Once

	mu      sync.Mutex
	out     strings.Builder
	pending []wantLine
}

// startBackground starts b in dir, in its own process group, and follows
// its output; it is stopped at the test's end if not before.
func startBackground(t *testing.T, b shBlock, dir string, env []string) *background {
	t.Helper()
	bg := &background{t: t, block: b, shown: make(chan struct{}), gone: make(chan struct{}), pending: b.want}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
	cmd.Dir, cmd.Env = dir, env
	// Every process it starts, and the ones they start, inherit w (its
	// output, and fd 3 for those that send their output elsewhere): r
	// reaches EOF once they have all exited.
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = w, w, []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		r.Close()
		t.Fatal(err)
	}
	w.Close()
	bg.pgid = cmd.Process.Pid
	go func() { cmd.Wait() }()
	bg.follow(r)
	t.Cleanup(bg.stop)
	return bg
}

// follow reads the block's output until every process holding it exited.
func (bg *background) follow(r io.ReadCloser) {
	if len(bg.pending) == 0 {
		close(bg.shown)
	}
	go func() {
		defer close(bg.gone)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			bg.line(sc.Text())
		}
		io.Copy(io.Discard, r) // a line too long: the rest, until EOF
	}()
}

// line records a line of output, and closes shown when it was the last
// line shown to be printed.
func (bg *background) line(l string) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	bg.out.WriteString(l + "\n")
	if len(bg.pending) == 0 {
		return
	}
	left := bg.pending[:0]
	for _, w := range bg.pending {
		if !printsLoose(l, w.text) {
			left = append(left, w)
		}
	}
	bg.pending = left
	if len(left) == 0 {
		close(bg.shown)
	}
}

// missing are the lines shown not printed yet, with their line of
// README.md.
func (bg *background) missing() []string {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	var out []string
	for _, w := range bg.pending {
		out = append(out, fmt.Sprintf("README.md:%d: %s", w.line, w.text))
	}
	return out
}

func (bg *background) output() string {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	return bg.out.String()
}

// stop ends the block as Ctrl-C would (SIGTERM to its process group, then
// SIGKILL: tutorial_test.go's stopAll), once.
func (bg *background) stop() {
	bg.once.Do(func() { stopAll(bg.t, bg.pgid, bg.gone) })
}

// devLogTail is the end of the operator's log make run writes, for a
// failure's message.
func devLogTail(dir string) string {
	log, err := os.ReadFile(filepath.Join(dir, ".cueop", "dev", "operator.log"))
	if err != nil {
		return ""
	}
	return "\n--- the end of .cueop/dev/operator.log:\n" + tail(string(log), 40)
}

// copyCheckout copies the files of the checkout at repo that git does not
// ignore (tracked or not, as they are on disk) into dir.
func copyCheckout(t *testing.T, repo, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	n := 0
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		st, err := os.Lstat(filepath.Join(repo, f))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d files copied from %s", n, repo)
	}
}

// loose are the parts of a line shown that vary from run to run, and the
// patterns they match, over the line quoted by regexp.QuoteMeta.
var loose = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}\b`), `\d{2}:\d{2}:\d{2}`},
	{regexp.MustCompile(`\brevision=[0-9a-f]{10}\b`), `revision=[0-9a-f]{10}`},
	{regexp.MustCompile(`(^|[ (])\d+(\\\.\d+)?(ms|s|m|h|d)(\d+(ms|s|m|h))?($|[ )])`), `${1}[0-9.]+(ms|s|m|h|d)([0-9]+(ms|s|m|h))?${6}`},
}

// printsLoose tells whether a line of out is want, `...` in want standing
// for any text, and its times, durations and revision hashes for any.
func printsLoose(out, want string) bool {
	parts := strings.Split(want, "...")
	for i, p := range parts {
		p = regexp.QuoteMeta(p)
		for _, l := range loose {
			p = l.re.ReplaceAllString(p, l.with)
		}
		parts[i] = p
	}
	re := regexp.MustCompile("(?m)^" + strings.Join(parts, ".*") + "$")
	return re.MatchString(out)
}

// TestPrintsLoose: times, durations, ages and revision hashes match any;
// the rest of a line exactly.
func TestPrintsLoose(t *testing.T) {
	for _, c := range []struct {
		out, want string
		ok        bool
	}{
		{"control plane ready in 12.4s (logs: /tmp/x/logs)", "control plane ready in 3.9s (logs: /tmp/...)", true},
		{"09:01:02  RedisCluster default/sample  phase=Running revision=0123456789 Ready=True", "15:44:17  RedisCluster default/sample  phase=Running revision=da5babc607 Ready=True", true},
		{"sample      5      5       Running   2m10s", "sample      5      5       Running   45s", true},
		{"sample      3      5       Running   2m10s", "sample      5      5       Running   45s", false},
		{"applied 4 samples", "applied 5 samples", false},
		{"09:01:02  Blog default/news  Ready=True", "15:44:17  RedisCluster default/sample  Ready=True", false},
	} {
		if got := printsLoose(c.out, c.want); got != c.ok {
			t.Errorf("printsLoose(%q, %q) = %v, want %v", c.out, c.want, got, c.ok)
		}
	}
}
