package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	clustertest.SetLogger()
	clustertest.Main(m, localcluster.Options{ExtraArgs: map[string][]string{
		localcluster.KubeAPIServer: {"--enable-admission-plugins=OwnerReferencesPermissionEnforcement"},
	}})
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

// The cluster helpers, by their short names.
var (
	kubectl     = clustertest.Kubectl
	mustKubectl = clustertest.MustKubectl
	eventually  = clustertest.Eventually
)
