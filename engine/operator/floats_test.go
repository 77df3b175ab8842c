package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// ratioKind doubles its float field into its ConfigMap "out".
const ratioKind = `package ratio
resource: {group: "ratio.test.example", version: "v1", kind: "Ratio"}
#Spec: {ratio: float}
parent: {metadata: name: string, spec: #Spec}
children: out: {
	apiVersion: "v1", kind: "ConfigMap"
	metadata: name: "\(parent.metadata.name)-out"
	data: double: "\(parent.spec.ratio * 2)"
}
`

// TestWholeFloatRenders: kubectl applies a CR with ratio: 2.0, which the
// API server stores as 2 (the CRD says type: number); the CR renders
// (before: Stalled, InvalidSpec, spec.ratio: conflicting values 2 and
// float).
func TestWholeFloatRenders(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"ratio/ratio.cue": ratioKind})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "ratios.ratio.test.example", "--ignore-not-found") })
	operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, 60*time.Second, "ratios.ratio.test.example")
	mustKubectl(t, "apiVersion: ratio.test.example/v1\nkind: Ratio\nmetadata: {name: r, namespace: "+ns+"}\nspec: {ratio: 2.0}\n",
		"apply", "--server-side", "--field-manager=test", "-f", "-")
	out, _ := kubectl(t, "", "-n", ns, "get", "ratio/r", "-o", "json")
	if !strings.Contains(out, `"ratio": 2`+"\n") {
		t.Logf("the API server no longer stores ratio 2.0 as 2: %s", out)
	}
	eventually(t, 60*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "configmap", "r-out", "-o", "jsonpath={.data.double}")
		if err != nil || out != "4" {
			st, _ := kubectl(t, "", "-n", ns, "get", "ratio/r", "-o", `jsonpath={.status.conditions[?(@.type=="Stalled")].message}`)
			return fmt.Sprintf("Ratio r not rendered: double %q, %v; Stalled: %s", out, err, st)
		}
		return ""
	})
}
