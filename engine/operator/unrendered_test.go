package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// dialTemplate is a kind served at v1 (its hub) and v2, where v2 has a
// field, tier, that v1 lacks.
const dialTemplate = `package dial

resource: {group: "unrendered.test.example", version: "v1", kind: "Dial"}

#Spec: {replicas: *1 | int & >=1 & <=5}

` + testkit.ParentObserved + `children: cm: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: parent.metadata.name
	data: replicas: "\(parent.spec.replicas)"
}
ready: true

versions: v2: {
	#Spec: {size: *1 | int & >=1 & <=5, tier?: "gold" | "silver"}
	toHub: {in: spec: _, out: spec: replicas: in.spec.size}
	fromHub: {in: spec: _, out: spec: size: in.spec.replicas}
}
`

// TestSpokeOnlyFieldReportedOnCR: a Dial written at v2 with tier, which
// the hub v1 lacks, keeps it (it reads back at v2) and gets a Warning
// Event SpecNotRendered naming spec.tier, as the template never sees it.
func TestSpokeOnlyFieldReportedOnCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"dial": dialTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "dials.unrendered.test.example", "--ignore-not-found") })
	_, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	defer stop()
	clustertest.WaitEstablished(t, 60*time.Second, "dials.unrendered.test.example")
	eventually(t, time.Minute, func() string { // the CRD points at the conversion endpoint once it is served
		if _, err := kubectl(t, "apiVersion: unrendered.test.example/v2\nkind: Dial\nmetadata: {name: d, namespace: "+ns+"}\nspec: {size: 2, tier: gold}\n",
			"apply", "--server-side", "--field-manager=test", "-f", "-"); err != nil {
			return err.Error()
		}
		return ""
	})
	eventually(t, time.Minute, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=d,reason=SpecNotRendered", "-o", "jsonpath={.items[*].type} {.items[*].message}")
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(out, "Warning spec.tier (v2): kept by the annotation cueop.dev/conversion.v2 and read back at that version") || !strings.Contains(out, "the hub version v1") {
			return "events: " + out
		}
		return ""
	})
	if out := mustKubectl(t, "", "-n", ns, "get", "dials.v2.unrendered.test.example/d", "-o", "jsonpath={.spec.tier}"); out != "gold" {
		t.Errorf("spec.tier at v2 = %q, want it kept", out)
	}
	mustKubectl(t, "", "-n", ns, "delete", "dial/d", "--timeout=60s")
}
