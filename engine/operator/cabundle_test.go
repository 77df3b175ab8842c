package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestConversionPointedWithoutInstall: cueop run as config/ runs it, with
// --install-crds=false and the CRDs applied from crds/ (a Service
// clientConfig, no caBundle): cueop writes its endpoint and CA bundle into
// the live CRD, so that reads at v2 convert, and a restart writes nothing
// more into it; the CRD replaced from crds/ again, cueop writes it again.
func TestConversionPointedWithoutInstall(t *testing.T) {
	const crd = "redisclusters.cache.example.com"
	ns := clustertest.Namespace(t)
	b := testkit.Read(t, testkit.Root(), "crds/"+crd+".yaml")
	if strings.Contains(b, "caBundle") || !strings.Contains(b, "strategy: Webhook") {
		t.Fatalf("crds/%s.yaml: want a Webhook conversion without a caBundle", crd)
	}
	// A CRD left by an earlier test holds another clientConfig: start from crds/ alone.
	mustKubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+crd)
	installCRD(t, string(b), crd)

	dir := copyTemplates(t)
	for _, other := range []string{"blog", "staticsite", "webapp"} { // their CRDs are not applied
		testkit.Remove(t, dir, other)
	}
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	_, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	mustKubectl(t, redisYAML(ns, "pointed", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "redisclusters.v2.cache.example.com", "pointed", "-o", "jsonpath={.spec.size}")
		if err != nil || out != "2" {
			return fmt.Sprintf("read at v2: %q %v", out, err)
		}
		return ""
	})
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "redisclusters.v2.cache.example.com/pointed", "--timeout=90s")
	rv := mustKubectl(t, "", "get", "crd", crd, "-o", "jsonpath={.metadata.resourceVersion}")
	stop()
	act, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	defer stop()
	eventually(t, 90*time.Second, func() string {
		if act.ReconcilesOf("namespace", ns) == 0 {
			return "the restarted operator has not reconciled pointed"
		}
		return ""
	})
	act.Settled(t, 0, 60*time.Second)
	if got := mustKubectl(t, "", "get", "crd", crd, "-o", "jsonpath={.metadata.resourceVersion}"); got != rv {
		t.Errorf("a restart with the same endpoint wrote the CRD again (resourceVersion %s -> %s)", rv, got)
	}

	// A GitOps tool replaces the CRD with crds/ (its bundle gone): cueop
	// writes it again, and reads at v2 convert again.
	mustKubectl(t, string(b), "replace", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "redisclusters.v2.cache.example.com", "pointed", "-o", "jsonpath={.spec.size}")
		if err != nil || out != "2" {
			return fmt.Sprintf("read at v2 after the CRD was replaced from crds/: %q %v", out, err)
		}
		return ""
	})
}
