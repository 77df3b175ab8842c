package localcluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cueop/cueop/localcluster"
)

// TestStartStop starts a second, control-plane-only cluster, restarts its
// apiserver, and checks that Stop leaves no process and no directory behind.
func TestStartStop(t *testing.T) {
	t.Parallel()
	c, err := localcluster.Start(t.Context(), localcluster.Options{ControlPlaneOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	pids := c.PIDs()
	if len(pids) != 2 || pids[localcluster.Etcd] == 0 || pids[localcluster.KubeAPIServer] == 0 {
		t.Fatalf("PIDs() = %v, want etcd and kube-apiserver", pids)
	}
	t.Run("RestartAPIServer", func(t *testing.T) { testRestartAPIServer(t, c) })
	pids = c.PIDs() // the apiserver has a new one
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids)
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s left after Stop: %v", c.Dir, err)
	}
	if len(c.PIDs()) != 0 {
		t.Errorf("PIDs() after Stop = %v, want none", c.PIDs())
	}
}

func testRestartAPIServer(t *testing.T, c *localcluster.Cluster) {
	cs := kubernetes.NewForConfigOrDie(c.Config)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := readyz(t.Context(), c.Config); err == nil {
		t.Fatal("apiserver still answers after StopAPIServer")
	}
	if err := c.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := readyz(t.Context(), c.Config); err != nil {
		t.Fatalf("apiserver not ready after StartAPIServer: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(t.Context(), cm.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("object created before the restart: %v", err)
	}
}

// waitGone fails the test unless every process in pids is gone within 60 s,
// a bound generous enough for a loaded machine.
func waitGone(t *testing.T, pids map[string]int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for name, pid := range pids {
		for syscall.Kill(pid, 0) == nil { // ESRCH once it is gone and reaped
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) still running", name, pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

const helperEnv = "LOCALCLUSTER_TEST_HELPER"

// helperReport is what the helper process prints once its cluster is up.
type helperReport struct {
	Dir  string
	PIDs map[string]int
}

// runHelper starts a cluster, prints a helperReport and waits to be killed.
func runHelper() {
	c, err := localcluster.Start(context.Background(), localcluster.Options{ControlPlaneOnly: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(helperReport{Dir: c.Dir, PIDs: c.PIDs()})
	select {}
}

// TestChildrenDieWithTestBinary kills a process that started a cluster, without
// giving it a chance to call Stop, and checks that the cluster's processes die.
func TestChildrenDieWithTestBinary(t *testing.T) {
	t.Parallel()
	helper := exec.CommandContext(t.Context(), os.Args[0])
	helper.Env = append(os.Environ(), helperEnv+"=1")
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var rep helperReport
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&rep); err != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(rep.Dir) })
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitGone(t, rep.PIDs)
}

func TestMissingBinariesFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := localcluster.Start(t.Context(), localcluster.Options{BinDir: dir, TempDir: dir})
	if err == nil || !strings.Contains(err.Error(), "make k8s-bins") {
		t.Fatalf("Start with no binaries: err = %v, want one that says to run make k8s-bins", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Start with no binaries left %d entries in TempDir", len(entries))
	}
}

// TestDefaultBinDirMatchesBuildScript checks that DefaultBinDir and
// hack/k8s/build.sh agree on the cache directory.
func TestDefaultBinDirMatchesBuildScript(t *testing.T) {
	script := filepath.Join("..", "hack", "k8s", "build.sh")
	cases := []map[string]string{
		{"CUEOP_K8S_CACHE": "", "XDG_CACHE_HOME": ""},
		{"CUEOP_K8S_CACHE": "", "XDG_CACHE_HOME": "/xdg"},
		{"CUEOP_K8S_CACHE": "/k8s-cache", "XDG_CACHE_HOME": "/xdg"},
	}
	for _, env := range cases {
		for k, v := range env {
			t.Setenv(k, v)
		}
		out, err := exec.Command("bash", script, "--print-bin-dir").Output()
		if err != nil {
			t.Fatalf("%s --print-bin-dir: %v", script, err)
		}
		if got, want := strings.TrimSpace(string(out)), localcluster.DefaultBinDir(); got != want {
			t.Errorf("env %v: build.sh says %s, DefaultBinDir() = %s", env, got, want)
		}
	}
}
