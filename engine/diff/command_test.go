package diff_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// cueop builds the cueop binary for the test.
func cueop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cueop")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/cueop").CombinedOutput(); err != nil {
		t.Fatalf("build cueop: %v\n%s", err, out)
	}
	return bin
}

// runDiffCommand runs bin diff with the templates of dir in namespace ns,
// with --shared-identity (the operator of operatortest.Options acts as
// itself: its children carry no identity's label), and returns its output
// and exit code.
func runDiffCommand(t *testing.T, bin, dir, ns string, args ...string) (string, int) {
	t.Helper()
	return outputAndCode(t, diffCommand(t, bin, dir, ns, append([]string{"--shared-identity"}, args...)...))
}

// diffCommand is the command bin diff with the templates of dir in
// namespace ns, and args.
func diffCommand(t *testing.T, bin, dir, ns string, args ...string) *exec.Cmd {
	t.Helper()
	args = append([]string{"--templates", dir, "diff", "--kubeconfig", clustertest.Cluster().KubeconfigPath, "-n", ns}, args...)
	return exec.Command(bin, args...)
}

// outputAndCode runs cmd and returns its combined output and exit code.
func outputAndCode(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestDiffCommand runs `cueop diff` as a user does and checks its exit
// codes: 0 when nothing would change, 1 when something would, 2 on error,
// and its output: a summary, diffs, colours only when asked (stdout is
// not a terminal here), JSON with -o json.
func TestDiffCommand(t *testing.T) {
	ns := fleet(t, 2)
	bin := cueop(t)
	diffCmd := func(dir string, args ...string) (string, int) {
		t.Helper()
		return runDiffCommand(t, bin, dir, ns, args...)
	}
	if out, code := diffCmd(copyTemplates(t)); code != 0 || !strings.Contains(out, "RedisCluster.cache.example.com  2    2") {
		t.Errorf("unchanged templates: exit %d, want 0:\n%s", code, out)
	}
	relabel := edited(t, podLabels...)
	out, code := diffCmd(relabel)
	if code != 1 || !strings.Contains(out, "+    tier: cache") || strings.Contains(out, "\x1b[") {
		t.Errorf("relabel: exit %d, want 1, a diff without colours:\n%s", code, out)
	}
	t.Logf("cueop diff, Pods relabelled:\n%s", out)
	if out, _ := diffCmd(relabel, "--color", "always"); !strings.Contains(out, "\x1b[32m+    tier: cache\x1b[0m") {
		t.Errorf("--color always: want the added line green:\n%s", out)
	}
	out, code = diffCmd(relabel, "-o", "json")
	var r diff.Report
	if err := json.Unmarshal([]byte(out), &r); code != 1 || err != nil || len(r.CRs) != 2 {
		t.Errorf("-o json: exit %d, %v:\n%s", code, err, out)
	}
	if out, code := diffCmd(edited(t, podArgs...), "-o", "summary"); code != 1 || strings.Contains(out, "@@") || !strings.Contains(out, "/r0001: 2 destructive, failed: false") {
		t.Errorf("-o summary: exit %d, want 1, the table and the CRs with destructive changes, no diff:\n%s", code, out)
	}
	if out, code := diffCmd(edited(t, badPort...)); code != 2 || !strings.Contains(out, "refused") {
		t.Errorf("a refused child: exit %d, want 2:\n%s", code, out)
	}
	if out, code := diffCmd(edited(t, "containers: [{", "containerz: [{")); code != 2 || !strings.Contains(out, "containerz") || !strings.Contains(out, "admission") {
		t.Errorf("a misspelt Pod field: exit %d, want 2 naming it as the operator's admission would:\n%s", code, out)
	}
	if out, code := diffCmd(relabel, "--no-such-flag"); code != 2 {
		t.Errorf("a bad flag: exit %d, want 2:\n%s", code, out)
	}
}
