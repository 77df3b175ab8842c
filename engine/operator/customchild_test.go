package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// widgetCRD is a custom kind the client's scheme does not know: cueop
// caches its objects unstructured.
var widgetCRD = testCRD("parts.example.com", "Widget", preserveSpec)

// gadgetTemplate renders one Widget per Gadget, ready once it exists.
var gadgetTemplate = sizedChildTemplate("gadget", "parts.example.com", "Gadget", "parts.example.com/v1", "Widget", "widget")

// sizedChildTemplate is the template of package pkg whose kind (of group)
// renders one child of childKind at childAPIVersion, named like its CR
// under children.name, with the CR's spec.size: ready once the child has it.
func sizedChildTemplate(pkg, group, kind, childAPIVersion, childKind, name string) string {
	return strings.NewReplacer("PKG", pkg, "GROUP", group, "KIND", kind, "CHILDAPI", childAPIVersion, "CHILDKIND", childKind, "NAME", name).Replace(`package PKG

resource: {group: "GROUP", version: "v1", kind: "KIND"}

#Spec: {size: *1 | int & >=1}
#Status: {size: int}

` + testkit.ParentObserved + `
children: NAME: {
	apiVersion: "CHILDAPI"
	kind:       "CHILDKIND"
	metadata: name: parent.metadata.name
	spec: size: parent.spec.size
}
status: {
	if observed.NAME != _|_ {size: observed.NAME.spec.size}
	if observed.NAME == _|_ {size: 0}
}
ready: status.size == parent.spec.size
`)
}

// TestCustomKindChild runs a kind whose child is of a custom kind, whose
// CRD is installed after the operator started: it converges, a resync with
// a fresh cache finds it in sync (no apply), and a hand edit of its field
// is repaired.
func TestCustomKindChild(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"gadget": gadgetTemplate})
	allowed := render.MustKindSet("Widget.parts.example.com," + render.DefaultAllowedKinds)
	start := func() (*operatortest.Activity, func()) {
		opts := operatortest.Options(dir, ns)
		opts.AllowedKinds = allowed
		return operatortest.StartObserved(t, clustertest.Config(), opts)
	}
	_, stop := start()
	clustertest.WaitEstablished(t, 60*time.Second, "gadgets.parts.example.com")
	// The child kind's CRD comes after the operator started.
	installCRD(t, widgetCRD, "widgets.parts.example.com")
	mustKubectl(t, "apiVersion: parts.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: "+ns+"\nspec:\n  size: 2\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "gadget/g", "--timeout=120s")
	stop()
	c := newClient(t)
	widget := func() *unstructured.Unstructured {
		w := &unstructured.Unstructured{}
		w.SetAPIVersion("parts.example.com/v1")
		w.SetKind("Widget")
		must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, w))
		return w
	}
	rv := widget().GetResourceVersion()

	// A fresh operator on the converged Gadget sends no apply: it reconciles
	// the Gadget, settles, and the Widget is as the first one left it.
	before := inSync(t)
	act, stop := start()
	defer stop()
	eventually(t, 60*time.Second, func() string {
		if inSync(t) == before {
			return "the fresh operator has not reconciled the Gadget yet"
		}
		return ""
	})
	act.Settled(t, 0, 60*time.Second)
	if now := widget().GetResourceVersion(); now != rv {
		t.Fatalf("the Widget was written by a resync of a converged Gadget (resourceVersion %s -> %s)", rv, now)
	}

	mustKubectl(t, "", "-n", ns, "patch", "widget", "g", "--type=merge", "-p", `{"spec":{"size":7}}`)
	eventually(t, 60*time.Second, func() string {
		if size, _, _ := unstructured.NestedInt64(widget().Object, "spec", "size"); size != 2 {
			return "spec.size not restored"
		}
		return ""
	})
}
