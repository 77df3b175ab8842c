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
	return KubectlAt(Cluster().KubeconfigPath, stdin, args...)
}

// KubectlAt runs the real kubectl against the cluster of the kubeconfig
// file with stdin and returns its combined output: for a test's private
// control plane.
func KubectlAt(kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// MustKubectl is Kubectl that fails the test on error.
func MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	return MustKubectlAt(t, Cluster().KubeconfigPath, stdin, args...)
}

// MustKubectlAt is KubectlAt that fails the test on error.
func MustKubectlAt(t testing.TB, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	out, err := KubectlAt(kubeconfig, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Eventually polls cond every 100ms until it returns "" or timeout passes;
// then it fails the test with cond's last reason.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	if why := Within(timeout, cond); why != "" {
		t.Fatalf("not within %s: %s", timeout, why)
	}
}

// Within polls cond every 100ms until it returns "" or timeout passes, and
// returns its last reason ("" when it held).
func Within(timeout time.Duration, cond func() string) string {
	deadline := time.Now().Add(timeout)
	why := cond()
	for why != "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		why = cond()
	}
	return why
}

// InstallCRD applies a test CRD named name, waits for it to be
// Established, and deletes it (waiting until it is gone) at the test's end,
// so that a second run in the same process starts without it.
func InstallCRD(t testing.TB, crdYAML, name string) {
	t.Helper()
	MustKubectl(t, crdYAML, "apply", "-f", "-")
	DeleteCRDsAtEnd(t, name)
	WaitEstablished(t, 60*time.Second, name)
}

// DeleteCRDsAtEnd deletes the CRDs named in crds (a CRD's name, such as
// widgets.example.com), if they exist, at the test's end, waiting until
// they are gone: for the CRDs an operator under test installs, so that a
// second run in the same process starts without them.
func DeleteCRDsAtEnd(t testing.TB, crds ...string) {
	t.Helper()
	args := []string{"delete", "--ignore-not-found", "--wait", "--timeout=60s"}
	for _, crd := range crds {
		args = append(args, "crd/"+crd)
	}
	t.Cleanup(func() { _, _ = Kubectl(t, "", args...) })
}

// WaitEstablished waits until each CRD named in crds (a CRD's name, such
// as widgets.example.com) is Established, failing the test after timeout.
func WaitEstablished(t testing.TB, timeout time.Duration, crds ...string) {
	t.Helper()
	Eventually(t, timeout, func() string {
		for _, crd := range crds {
			if out, err := Kubectl(t, "", "wait", "--for=condition=Established", "crd/"+crd, "--timeout=5s"); err != nil {
				return "CRD " + crd + " not established: " + strings.TrimSpace(out)
			}
		}
		return ""
	})
}
