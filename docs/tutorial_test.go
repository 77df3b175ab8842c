package docs_test

import (
	"bufio"
	"context"
	"errors"
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

// shBlock is one ```sh block of docs/tutorial.md: the line of its opening
// fence, its text, and the output it shows: the lines of a ```text block
// that follows it directly, each the line of docs/tutorial.md it is on.
type shBlock struct {
	line int
	text string
	want []wantLine
	// background: opened with ```sh background, a command that runs until
	// stopped (README.md's make run).
	background bool
}

// wantLine is a line a block must print; `...` in it stands for any text.
type wantLine struct {
	line int
	text string
}

// tutorialBlocks returns the blocks of docs/tutorial.md that run, in order:
// those opened with ```sh, not ```sh no-test nor any other language, each
// with the output it shows (a ```text block right after it, only blank
// lines between). A file the tutorial has the reader write is written by a
// heredoc in one of them, so the tutorial's own CUE and YAML are what runs.
func tutorialBlocks(t *testing.T) []shBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := runBlocks(string(data))
	if err != nil {
		t.Fatalf("docs/tutorial.md: %v", err)
	}
	for _, b := range blocks {
		if b.background {
			t.Fatalf("docs/tutorial.md:%d: the tutorial runs in one shell: start a command in the background with &", b.line)
		}
	}
	return blocks
}

// runBlocks returns the run blocks of a Markdown text, as tutorialBlocks.
func runBlocks(text string) ([]shBlock, error) {
	var blocks []shBlock
	open, lang := 0, "" // the opening fence's line and language, in a block
	var body []string
	prevRun := false // the last block closed is a run block, and only blank lines followed
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		fence := strings.HasPrefix(trimmed, "```")
		switch {
		case open == 0 && fence:
			open, lang, body = i+1, strings.Join(strings.Fields(strings.TrimPrefix(trimmed, "```")), " "), nil
		case open > 0 && trimmed == "```":
			switch {
			case lang == "sh" || lang == "sh background":
				blocks = append(blocks, shBlock{line: open, text: strings.Join(body, "\n"), background: lang != "sh"})
			case lang == "text" && prevRun:
				last := &blocks[len(blocks)-1]
				for j, w := range body {
					last.want = append(last.want, wantLine{line: open + 1 + j, text: w})
				}
			}
			prevRun = lang == "sh" || lang == "sh background"
			open = 0
		case open > 0:
			body = append(body, l)
		case trimmed != "":
			prevRun = false
		}
	}
	if open > 0 {
		return nil, fmt.Errorf("the block opened at line %d is not closed", open)
	}
	if len(blocks) == 0 {
		return nil, errors.New("no sh block")
	}
	return blocks, nil
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
				emit(at, fmt.Sprintf("{ %s\n} || { echo 'tutorial.md:%d: this command must fail, and it succeeded' >&2; false; }", l, at))
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
	blocks := tutorialBlocks(t)
	script, lines := tutorialScript(blocks)
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
	// Out of time: SIGTERM to the group, as stopAll sends.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		aliveW.Close()
		t.Fatal(err)
	}
	aliveW.Close()
	gone := make(chan struct{})
	go func() { io.Copy(io.Discard, aliveR); close(gone) }()
	var stop sync.Once
	stopAllOnce := func() { stop.Do(func() { stopAll(t, cmd.Process.Pid, gone) }) }
	t.Cleanup(stopAllOnce) // should this test end before the next line
	runErr := cmd.Wait()
	stopAllOnce()
	t.Logf("the tutorial ran in %s", time.Since(start).Round(100*time.Millisecond))
	out, err := os.ReadFile(transcript.Name())
	if err != nil {
		t.Fatal(err)
	}
	if runErr == nil {
		// What the tutorial wrote goes with a run that passed; a failed
		// run leaves it for a look.
		t.Cleanup(func() { os.RemoveAll(filepath.Join(repo, ".cueop", "tutorial")) })
		if testing.Verbose() {
			t.Logf("the transcript:\n%s", out)
		}
		checkOutputs(t, blocks, string(out))
		return
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

// checkOutputs fails for each line a block shows as its output that is
// not a line of what it printed in the transcript.
func checkOutputs(t *testing.T, blocks []shBlock, out string) {
	t.Helper()
	printed := map[int]string{} // by block line
	for _, part := range strings.Split(out, blockMarker)[1:] {
		var n int
		if _, err := fmt.Sscanf(part, "%d", &n); err == nil {
			printed[n] = part
		}
	}
	for _, b := range blocks {
		for _, w := range b.want {
			if !printsLine(printed[b.line], w.text) {
				t.Errorf("docs/tutorial.md:%d: the block of line %d did not print\n\t%s\nit printed:\n%s", w.line, b.line, w.text, printed[b.line])
			}
		}
	}
}

// printsLine tells whether a line of out is want, `...` in want standing
// for any text.
func printsLine(out, want string) bool {
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile("(?m)^" + strings.Join(parts, ".*") + "$")
	return re.MatchString(out)
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

// TestTutorialScript: the blocks that run, the output shown after them,
// and a `! cmd` that succeeds failing at its own line, on a small text.
func TestTutorialScript(t *testing.T) {
	md := strings.Join([]string{
		"# A page", // 1
		"```sh",    // 2
		"echo one", // 3
		"```",      // 4
		"",         // 5
		"```text",  // 6
		"o...",     // 7
		"```",      // 8
		"```sh no-test",
		"exit 3", // 10
		"```",
		"Prose.", // 12
		"```text",
		"not output of a block", // 14
		"```",
		"```sh", // 16
		"f() { true; }",
		"! f   # it succeeds", // 18
		"echo unreached",
		"```",
	}, "\n")
	blocks, err := runBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].line != 2 || blocks[1].line != 16 {
		t.Fatalf("blocks = %+v, want those of lines 2 and 16", blocks)
	}
	if len(blocks[0].want) != 1 || blocks[0].want[0] != (wantLine{line: 7, text: "o..."}) || len(blocks[1].want) != 0 {
		t.Fatalf("want = %+v, %+v; want line 7 for the first block only", blocks[0].want, blocks[1].want)
	}
	script, lines := tutorialScript(blocks)
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err == nil || strings.Contains(string(out), "unreached") {
		t.Fatalf("the script passed a `! cmd` that succeeds:\n%s", out)
	}
	if got := failedLine(string(out), lines); got != 18 {
		t.Errorf("failed at line %d, want 18:\n%s", got, out)
	}
	if line, _ := lastBlock(string(out)); line != "16" {
		t.Errorf("last block %q, want 16", line)
	}
	if !printsLine(string(out), "o...") || printsLine(string(out), "...two") {
		t.Errorf("printsLine does not match `...` as any text in\n%s", out)
	}
}
