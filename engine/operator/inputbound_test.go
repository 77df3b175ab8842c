package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// bulkKind reads every ConfigMap labelled with its spec's set and counts
// them into its ConfigMap "out".
const bulkKind = `package bulk
resource: {group: "bulk.test.example", version: "v1", kind: "Bulk"}
#Spec: {set: string}
parent: {metadata: name: string, spec: #Spec}
referenced: cms: [...{...}]
references: cms: {apiVersion: "v1", kind: "ConfigMap", selector: matchLabels: set: parent.spec.set}
children: out: {
	apiVersion: "v1", kind: "ConfigMap"
	metadata: name: "\(parent.metadata.name)-out"
	data: count: "\(len(referenced.cms))"
}
`

// TestReferencedObjectsBounded: a CR whose selector matches 70 ConfigMaps
// of a million bytes each (more than the 64 MiB one message to a render
// worker holds) stalls, RenderBudget, naming the reference, and another CR
// of its namespace renders (before: the request was never sent, the
// render waited for the live worker to die, for good, and every later
// render of the namespace was refused as Busy).
func TestReferencedObjectsBounded(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"bulk/bulk.cue": bulkKind})
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "crd", "bulks.bulk.test.example", "--ignore-not-found", "--wait", "--timeout=60s")
	})
	operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	clustertest.WaitEstablished(t, 60*time.Second, "bulks.bulk.test.example")
	c := newClient(t)
	data := strings.Repeat("x", 1000000)
	for i := range 70 {
		must(t, c.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Namespace: ns, Labels: map[string]string{"set": "big"}},
			Data:       map[string]string{"d": data},
		}))
	}
	must(t, c.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "small-0", Namespace: ns, Labels: map[string]string{"set": "small"}},
	}))
	for _, name := range []string{"big", "small"} {
		mustKubectl(t, "apiVersion: bulk.test.example/v1\nkind: Bulk\nmetadata: {name: "+name+", namespace: "+ns+"}\nspec: {set: "+name+"}\n",
			"apply", "--server-side", "--field-manager=test", "-f", "-")
	}
	eventually(t, 120*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "bulk/big", "-o",
			`jsonpath={.status.conditions[?(@.type=="Stalled")].status}|{.status.conditions[?(@.type=="Stalled")].reason}|{.status.conditions[?(@.type=="Stalled")].message}`)
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(out, "True|RenderBudget|") || !strings.Contains(out, "references.cms") {
			return "Bulk big: Stalled status|reason|message = " + out
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "configmap", "small-out", "-o", "jsonpath={.data.count}")
		if err != nil || out != "1" {
			return fmt.Sprintf("Bulk small not rendered: count %q, %v", out, err)
		}
		return ""
	})
	out, _ := kubectl(t, "", "-n", ns, "get", "bulk/big", "-o", `jsonpath={.status.conditions[?(@.type=="Stalled")].message}`)
	t.Log(out)
}
