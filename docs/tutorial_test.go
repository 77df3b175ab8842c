package docs_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shBlock is one ```sh block of docs/tutorial.md: the line of its opening
// fence and its text.
type shBlock struct {
	line int
	text string
}

// tutorialBlocks returns the blocks of docs/tutorial.md that run, in order:
// those opened with ```sh, not ```sh no-test nor any other language. A file
// the tutorial has the reader write is written by a heredoc in one of them,
// so the tutorial's own CUE and YAML are what runs.
func tutorialBlocks(t *testing.T) []shBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []shBlock
	var cur *shBlock
	var body []string
	for i, l := range strings.Split(string(data), "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		switch {
		case cur == nil && fence:
			if info := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "```")); len(info) == 1 && info[0] == "sh" {
				cur = &shBlock{line: i + 1}
			} else {
				cur = &shBlock{line: -1} // shown, not run
			}
			body = nil
		case cur != nil && fence && strings.TrimSpace(l) == "```":
			if cur.line > 0 {
				cur.text = strings.Join(body, "\n")
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			body = append(body, l)
		}
	}
	if cur != nil {
		t.Fatalf("docs/tutorial.md: the block opened at line %d is not closed", cur.line)
	}
	if len(blocks) == 0 {
		t.Fatal("docs/tutorial.md has no sh block")
	}
	return blocks
}

// blockMarker opens each block's output in the transcript; failMarker
// opens the line the ERR trap prints.
const (
	blockMarker = "=== tutorial.md:"
	failMarker  = "=== failed at script line "
)

// tutorialScript is the blocks as one bash script, and the line of
// docs/tutorial.md each of its lines comes from (lines[i] for script line
// i+1). Each block is preceded by a marker naming its line, and a command
// that fails prints its script line (the ERR trap). A line `! cmd` must
// fail: bash's errexit ignores a negated command, so the script makes its
// success an error.
func tutorialScript(blocks []shBlock) (script string, lines []int) {
	var b strings.Builder
	emit := func(from int, text string) {
		b.WriteString(text + "\n")
		for range strings.Count(text, "\n") + 1 {
			lines = append(lines, from)
		}
	}
	emit(0, `trap 'echo "`+failMarker+`$LINENO (exit $?): $BASH_COMMAND" >&2' ERR`)
	for _, bl := range blocks {
		emit(bl.line, fmt.Sprintf("echo '%s%d'", blockMarker, bl.line))
		for i, l := range strings.Split(bl.text, "\n") {
			at := bl.line + 1 + i
			if strings.HasPrefix(l, "! ") {
				// The newline ends a trailing comment of the line.
				emit(at, fmt.Sprintf("{ %s\n} || { echo 'tutorial.md:%d: this command must fail, and it succeeded' >&2; exit 1; }", l, at))
				continue
			}
			emit(at, l)
		}
	}
	return b.String(), lines
}

// TestTutorial runs the sh blocks of docs/tutorial.md in order, in one
// bash (-euo pipefail), from the repository root, as a reader would: it
// builds bin/cueop (make build), starts `cueop dev` in the background on
// the tutorial's kind and drives it with kubectl. Its files are in
// .cueop/tutorial, which git ignores. It fails naming the line of the block
// that failed, with that block's output and the tail of the dev log.
// kubectl is the reader's, from PATH; the control-plane binaries come from
// CUEOP_K8S_BIN_DIR (or the default cache, as for make run). Every process
// the tutorial starts (`cueop dev` and its control plane) is stopped before
// the test returns.
func TestTutorial(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("the tutorial needs kubectl on PATH: %v", err)
	}
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	script, lines := tutorialScript(tutorialBlocks(t))
	tmp := t.TempDir()
	transcript, err := os.Create(filepath.Join(tmp, "transcript"))
	if err != nil {
		t.Fatal(err)
	}
	defer transcript.Close()
	// Every process the script starts, and the ones they start, inherit
	// the write end of alive as fd 3: its read end reaches EOF once they
	// have all exited.
	aliveR, aliveW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer aliveR.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(),
		// Nothing before the tutorial's own export reaches a cluster of the
		// reader's; kubectl's discovery cache stays out of $HOME.
		"KUBECONFIG="+filepath.Join(tmp, "no-kubeconfig"),
		"KUBECACHEDIR="+filepath.Join(tmp, "kube-cache"),
	)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = transcript, transcript
	cmd.ExtraFiles = []*os.File{aliveW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		aliveW.Close()
		t.Fatal(err)
	}
	aliveW.Close()
	gone := make(chan struct{})
	go func() { io.Copy(io.Discard, aliveR); close(gone) }()
	runErr := cmd.Wait()
	stopAll(t, cmd.Process.Pid, gone)
	t.Logf("the tutorial ran in %s", time.Since(start).Round(100*time.Millisecond))
	if runErr == nil {
		return
	}
	out, err := os.ReadFile(transcript.Name())
	if err != nil {
		t.Fatal(err)
	}
	line, block := lastBlock(string(out))
	if failed := failedLine(string(out), lines); failed > 0 {
		line = fmt.Sprintf("%d (the block of line %s)", failed, line)
	}
	devLog, _ := os.ReadFile(filepath.Join(repo, ".cueop", "tutorial", "dev.log"))
	t.Fatalf("docs/tutorial.md:%s failed (%v; %v):\n%s\n--- the end of .cueop/tutorial/dev.log:\n%s",
		line, runErr, ctx.Err(), block, tail(string(devLog), 40))
}

// stopAll ends what the tutorial left running: SIGTERM to the script's
// process group (`cueop dev` stops its control plane on it), then SIGKILL
// if they have not all exited within a minute. gone is closed once every
// process holding the alive pipe has exited.
func stopAll(t *testing.T, pgid int, gone <-chan struct{}) {
	t.Helper()
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-gone:
		return
	case <-time.After(time.Minute):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-gone:
		t.Errorf("the tutorial's processes did not stop within a minute of SIGTERM; killed")
	case <-time.After(30 * time.Second):
		t.Errorf("the tutorial's processes are still running after SIGKILL")
	}
}

// lastBlock returns the line of the last block the transcript opened, and
// the output from its marker on.
func lastBlock(out string) (line, block string) {
	i := strings.LastIndex(out, blockMarker)
	if i < 0 {
		return "?", out
	}
	block = out[i:]
	sc := bufio.NewScanner(strings.NewReader(block))
	if sc.Scan() {
		line = strings.TrimPrefix(sc.Text(), blockMarker)
	}
	return line, block
}

// failedLine is the line of docs/tutorial.md of the last command the ERR
// trap reported in the transcript, or 0.
func failedLine(out string, lines []int) int {
	i := strings.LastIndex(out, failMarker)
	if i < 0 {
		return 0
	}
	var n int
	if _, err := fmt.Sscanf(out[i+len(failMarker):], "%d", &n); err != nil || n < 1 || n > len(lines) {
		return 0
	}
	return lines[n-1]
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
