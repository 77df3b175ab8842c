package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// nutTemplate renders one Bolt per Nut, retained when the Nut is deleted.
const nutTemplate = `package nut

resource: {group: "nuts.example.com", version: "v1", kind: "Nut"}

#Spec: {size: *1 | int & >=1}

` + testkit.ParentObserved + `
children: bolt: {
	apiVersion: "bolts.example.com/v1"
	kind:       "Bolt"
	metadata: name: parent.metadata.name
	spec: size: parent.spec.size
}
policies: bolt: onDelete: "retain"
ready: observed.bolt != _|_
`

// TestRetainedKindCRDDeleted: a Nut whose Bolt, a custom kind, is
// retained is deleted after the Bolt CRD was (its Bolts with it): its
// finalizer goes, as no Bolt can be left (before: the REST mapper still
// mapped Bolt, its list answered 404, and the deletion waited forever).
func TestRetainedKindCRDDeleted(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"nut": nutTemplate})
	clustertest.DeleteCRDsAtEnd(t, "nuts.nuts.example.com")
	installCRD(t, testCRD("bolts.example.com", "Bolt", preserveSpec), "bolts.bolts.example.com")
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Bolt.bolts.example.com," + render.DefaultAllowedKinds)
	operatortest.StartObserved(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "nuts.nuts.example.com")
	mustKubectl(t, "apiVersion: nuts.example.com/v1\nkind: Nut\nmetadata:\n  name: nn\n  namespace: "+ns+"\nspec:\n  size: 2\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "nut/nn", "--timeout=120s")
	if out, _ := kubectl(t, "", "-n", ns, "get", "nut", "nn", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(out, wellknown.FinalizerRetain) {
		t.Fatalf("Nut's finalizers %s, want %s", out, wellknown.FinalizerRetain)
	}
	mustKubectl(t, "", "delete", "crd", "bolts.bolts.example.com", "--wait", "--timeout=60s")
	mustKubectl(t, "", "-n", ns, "delete", "nut", "nn", "--wait=false")
	mustKubectl(t, "", "-n", ns, "wait", "--for=delete", "nut/nn", "--timeout=90s")
}
