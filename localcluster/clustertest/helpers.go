package clustertest

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// SetLogger sends controller-runtime's and client-go's logs to stderr when
// CUEOP_TEST_LOG is set, and discards them otherwise. Call it in TestMain.
func SetLogger() {
	if os.Getenv("CUEOP_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
		return
	}
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
}

// Kubectl runs the real kubectl against the test cluster with stdin and
// returns its combined output.
func Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", Cluster().KubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// MustKubectl is Kubectl that fails the test on error.
func MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := Kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Eventually polls cond every 100ms until it returns "" or timeout passes;
// then it fails the test with cond's last reason.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	why := cond()
	for why != "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		why = cond()
	}
	if why != "" {
		t.Fatalf("not within %s: %s", timeout, why)
	}
}
