package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// Paths and names of the deployment under test.
const (
	configDefault  = "../config/default"
	templatesDir   = "../templates"
	systemNS       = "cueop-system"
	serviceAccount = "system:serviceaccount:cueop-system:cueop-controller"
)

// TestMain starts one control plane for the package. The API server also
// runs OwnerReferencesPermissionEnforcement, as OpenShift and hardened
// clusters do, so that the role must grant what setting blockOwnerDeletion
// on a child's owner reference needs.
func TestMain(m *testing.M) {
	if os.Getenv("CUEOP_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	clustertest.Main(m, localcluster.Options{ExtraArgs: map[string][]string{
		localcluster.KubeAPIServer: {"--enable-admission-plugins=OwnerReferencesPermissionEnforcement"},
	}})
}

// kubectl runs the real kubectl against the test cluster, from this
// directory.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", clustertest.Cluster().KubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// buildDefault is `kubectl kustomize config/default`, parsed. It needs no
// cluster.
func buildDefault(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", configDefault).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("kubectl kustomize %s: %v\n%s", configDefault, err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v", configDefault, err)
	}
	objs, err := golden.ParseObjects(out)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", configDefault, err)
	}
	return objs
}

// find returns the object of kind and name, or fails.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("config/default has no %s %s", kind, name)
	return nil
}

// typed converts u into out, a typed API object.
func typed(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// yamlStream writes objs as one YAML stream, for kubectl apply -f -.
func yamlStream(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	var b strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}

// eventually polls cond every 200ms until it returns "" or the timeout
// ends; then it fails with the last reason.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		if why = cond(); why == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", timeout, why)
}
