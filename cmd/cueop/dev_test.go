package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// brokenKind is a package that defines a kind but does not compile: the
// operator serves the other kinds and logs the error.
const brokenKind = `package broken

resource: {group: "broken.example.com", version: "v1", kind: "Broken"}
#Spec: {}
#Status: {}
parent: spec: #Spec
children: a: {apiVersion: "v1", kind: "ConfigMap", metadata: name: 1 & 2}
children: b: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "b" & 3}
`

// TestDevExitsWhenReady runs `cueop dev --exit-when-ready` (what `make run`
// runs, on its own local control plane) and checks what a newcomer sees:
// status lines and an error on one readable line, not JSON logs, which go
// to a file beside the kubeconfig. The samples hold a Blog (a claim, a
// migration Job in wave 0, a Deployment, Service and Ingress in wave 1) and
// the ConfigMap it references: it reaches Ready with no hand-made object,
// its claim bound by the local cluster's provisioner and its Job completed
// by kwok, and the ConfigMap, not a CR, is only applied.
// hexRun is a digest in a line: 32 hex digits or more.
var hexRun = regexp.MustCompile(`[0-9a-f]{32,}`)

func TestDevExitsWhenReady(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	templates := filepath.Join(dir, "templates")
	if err := os.CopyFS(templates, os.DirFS("../../templates")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteKind(t, templates, "broken", brokenKind)
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--templates", templates, "dev", "--samples", "../../config/samples",
		"--kubeconfig-out", kubeconfig, "--exit-when-ready", "--timeout", "2m"})
	if err := root.Execute(); err != nil {
		t.Fatalf("cueop dev: %v\n%s", err, out.String())
	}
	logFile := filepath.Join(dir, devLogFile)
	for _, want := range []string{
		"control plane ready in", "kubectl --kubeconfig " + kubeconfig,
		"operator logs (JSON) in " + logFile,
		"RedisCluster default/sample", "phase=Running readyReplicas=3", "Ready=True (Ready)",
		"StaticSite default/docs", "every sample is Ready",
		"Blog default/news", "volume=Bound",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !hasLine(out.String(), "Blog default/news", "migrated=true", "volume=Bound", "Ready=True (Ready)") {
		t.Errorf("no line says the Blog is migrated, bound and Ready:\n%s", out.String())
	}
	if strings.Contains(out.String(), "ConfigMap default/blog-settings") {
		t.Errorf("the ConfigMap sample, not a CR, has a status line:\n%s", out.String())
	}
	loadErrors := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") || strings.Contains(line, `"msg"`) {
			t.Errorf("output has a JSON log line: %s", line)
		}
		if strings.Contains(line, "serving kind") {
			t.Errorf("output has an info log line: %s", line)
		}
		// ERROR is for what a person must act on: only the broken template.
		if strings.Contains(line, "ERROR") && !strings.Contains(line, "templates did not load") {
			t.Errorf("output has an error line the author has nothing to do about: %s", line)
		}
		if hexRun.MatchString(line) {
			t.Errorf("a status line carries a digest: %s", line)
		}
		if strings.Contains(line, "templates did not load") {
			loadErrors++
			// The level, the message and the CUE error with its position, on one line.
			for _, want := range []string{"ERROR", "broken/broken.cue:", "conflicting values"} {
				if !strings.Contains(line, want) {
					t.Errorf("error line lacks %q: %s", want, line)
				}
			}
		}
	}
	if loadErrors != 1 {
		t.Errorf("%d lines tell that the templates did not load, want 1:\n%s", loadErrors, out.String())
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Errorf("kubeconfig not written: %v", err)
	}
	msgs := jsonLogMessages(t, logFile)
	for _, want := range []string{"serving kind", "templates did not load; the last good revision of each kind keeps serving"} {
		if !msgs[want] {
			t.Errorf("log file %s has no JSON line %q (has %v)", logFile, want, msgs)
		}
	}
}

// hasLine reports whether a line of out holds every one of want.
func hasLine(out string, want ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// jsonLogMessages reads a file of JSON log lines and returns their messages.
// logTail is what the log file path says of each range's kinds (the lines
// above info, those of kinds served, refused or stopped) and its last n
// lines, or why not: a failure seen once under load then says what the
// replicas did.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var picked []string
	for _, l := range lines {
		if !strings.Contains(l, `"level":"info"`) || strings.Contains(l, `"msg":"serving kind"`) ||
			strings.Contains(l, "shard range") || strings.Contains(l, "Starting workers") {
			picked = append(picked, l)
		}
	}
	return strings.Join(picked, "\n") + "\n...\n" + strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func jsonLogMessages(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var entry struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Errorf("log line is not JSON: %v: %s", err, sc.Text())
			continue
		}
		msgs[entry.Msg] = true
	}
	return msgs
}

// TestDevLoggerOneLine: an error whose message and error span lines is one
// console line, without stack trace, and a JSON line (with it) in the file.
func TestDevLoggerOneLine(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	log, path, closeLog, err := devLogger(&zap.Options{}, false, dir, &out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("quiet", "kind", "K")
	log.Error(errors.New("first\nsecond"), "it\nfailed", "kind", "K")
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "ERROR") || !strings.Contains(lines[0], "it; failed") ||
		!strings.Contains(lines[0], `first\nsecond`) || strings.Contains(lines[0], "quiet") {
		t.Errorf("console output is not one error line:\n%s", out.String())
	}
	msgs := jsonLogMessages(t, path)
	if !msgs["quiet"] || !msgs["it\nfailed"] {
		t.Errorf("log file lacks a message: %v", msgs)
	}
}

// TestDevShardedReplicas runs `cueop dev --shards 2 --replicas 2`: two
// replicas in the process share the ranges of the samples, on a local
// kube-apiserver with the ShardedListAndWatch gate on, and converge them.
func TestDevShardedReplicas(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	root := newRoot()
	out := newLockedBuffer() // the replicas' goroutines may log as dev returns
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"--templates", "../../templates", "dev", "--samples", "../../config/samples",
		"--kubeconfig-out", kubeconfig, "--exit-when-ready", "--timeout", "2m", "--zap-log-level", "info", // the log file's level; the console shows warnings and errors
		"--shards", "2", "--replicas", "2"})
	if err := root.Execute(); err != nil {
		t.Fatalf("cueop dev --shards 2 --replicas 2: %v\n%s\nthe operator's log (%s), last lines:\n%s", err, out.String(),
			filepath.Join(filepath.Dir(kubeconfig), "operator.log"), logTail(filepath.Join(filepath.Dir(kubeconfig), "operator.log"), 60))
	}
	for _, want := range []string{
		"2 replicas (dev-replica-0..1) share 2 shard ranges", "get leases -n default",
		"RedisCluster default/sample", "phase=Running readyReplicas=3", "StaticSite default/docs", "every sample is Ready",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDevIdleCostsNoCPU runs `cueop dev` as `make run` does (no
// --exit-when-ready), here with no samples: a RedisCluster applied with
// kubectl gets its status lines, and once it reads Ready the process's CPU
// over 10 s is measured: an idle dev must sleep, not spin.
func TestDevIdleCostsNoCPU(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	root := newRoot()
	out := newLockedBuffer()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"--templates", "../../templates", "dev", "--samples", t.TempDir(), "--testdata", "../../testdata", "--kubeconfig-out", kubeconfig})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cueop dev: %v\n%s", err, out.String())
		}
	}()
	const cr = "apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: mine, namespace: default}\nspec: {replicas: 2}\n"
	clustertest.Eventually(t, 3*time.Minute, func() string {
		apply := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(cr)
		if b, err := apply.CombinedOutput(); err != nil {
			return "kubectl apply: " + string(b)
		}
		return ""
	})
	clustertest.Eventually(t, 3*time.Minute, func() string {
		if last := lastLineWith(out.String(), "RedisCluster default/mine"); !strings.Contains(last, "Ready=True") {
			return "no Ready line for the CR applied with kubectl; last: " + last + "\n" + out.String()
		}
		return ""
	})
	before := processCPU(t)
	time.Sleep(10 * time.Second) // the window measured, not a wait for a signal
	used := processCPU(t) - before
	t.Logf("idle cueop dev used %s of CPU in 10 s", used.Round(time.Millisecond))
	if used > 2*time.Second {
		t.Errorf("idle cueop dev used %s of CPU in 10 s, want well under 2 s", used)
	}
}

// newLockedBuffer is a buffer that the dev goroutines write to and a test
// reads, under one lock.
func newLockedBuffer() *lockedWriter { return &lockedWriter{w: &bytes.Buffer{}} }

func lastLineWith(out, key string) string {
	last := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, key) {
			last = line
		}
	}
	return last
}

// processCPU is the user and system CPU time this process has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
