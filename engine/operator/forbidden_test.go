package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

const fbGroup = "fbtest.example.com"

// fbGadgetTemplate renders a ServiceAccount and, while spec.config, a
// ConfigMap: children ready as soon as they exist.
const fbGadgetTemplate = `package gadget

resource: {group: "fbtest.example.com", version: "v1", kind: "Gadget"}

#Spec: {config: *true | bool}
#Status: {children: int}

` + testkit.ParentObserved + `
children: account: {apiVersion: "v1", kind: "ServiceAccount", metadata: name: parent.metadata.name}
if parent.spec.config {
	children: settings: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: a: "1"}
}
status: children: len(observed)
`

// fbWidgetTemplate renders a ServiceAccount only.
const fbWidgetTemplate = `package widget

resource: {group: "fbtest.example.com", version: "v1", kind: "Widget"}

#Spec: {}
#Status: {children: int}

` + testkit.ParentObserved + `
children: account: {apiVersion: "v1", kind: "ServiceAccount", metadata: name: parent.metadata.name}
status: children: len(observed)
`

// fbLookupTemplate references the ConfigMap "settings" and renders a
// ServiceAccount.
const fbLookupTemplate = `package lookup

resource: {group: "fbtest.example.com", version: "v1", kind: "Lookup"}

#Spec: {}
#Status: {found: bool}

` + testkit.ParentObserved + `referenced: [string]: {...}

references: settings: {apiVersion: "v1", kind: "ConfigMap", name: "settings"}

children: account: {apiVersion: "v1", kind: "ServiceAccount", metadata: name: parent.metadata.name}
status: found: referenced.settings.data != _|_
`

func fbCR(kind, ns, name, spec string) string {
	return "apiVersion: " + fbGroup + "/v1\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {" + spec + "}\n"
}

// startLimited runs an operator on the kinds of pkgs in ns that acts as a
// ServiceAccount of ns whose role refuses the verbs of refused.
func startLimited(t *testing.T, ns string, pkgs map[string]string, refused map[string][]string) *limitedUser {
	t.Helper()
	u := newLimitedUser(t, ns, "cueop-limited-"+ns, operatorRules([]string{fbGroup}, refused))
	operatortest.Start(t, u.Config(), operatortest.Options(kindsDir(t, pkgs), ns))
	for name := range pkgs {
		clustertest.WaitEstablished(t, 60*time.Second, name+"s."+fbGroup)
	}
	return u
}

// forbidden says why the CR is not Ready=False and Stalled with reason
// Forbidden naming every part, or "".
func forbidden(t *testing.T, c client.Client, kind, ns, name string, parts ...string) string {
	cr := getObj(t, c, fbGroup+"/v1", kind, ns, name)
	if ready := conditionOf(cr, "Ready"); ready["reason"] != "Forbidden" {
		return fmt.Sprintf("Ready = %v", ready)
	}
	return stalledCR(cr, "Forbidden", parts...)
}

func uidOf(t *testing.T, c client.Client, kind, ns, name string) types.UID {
	return getObj(t, c, "v1", kind, ns, name).GetUID()
}

// TestForbiddenChildStallsOnlyItsCR: the role refuses to create
// ConfigMaps. The Gadget reads Ready=False Forbidden naming the ConfigMap,
// the verb and the user, with one Event; its ServiceAccount is created and
// a Widget of the same operator converges; nothing is deleted. Once the
// role grants ConfigMaps the Gadget converges, no restart.
func TestForbiddenChildStallsOnlyItsCR(t *testing.T) {
	ns := clustertest.Namespace(t)
	u := startLimited(t, ns, map[string]string{"gadget": fbGadgetTemplate, "widget": fbWidgetTemplate},
		map[string][]string{"configmaps": {"create", "update", "patch"}})
	c := newClient(t)
	mustKubectl(t, fbCR("Gadget", ns, "g", "")+"---\n"+fbCR("Widget", ns, "w", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		return forbidden(t, c, "Gadget", ns, "g", "ConfigMap "+ns+"/g: forbidden for "+u.Username(), "resource configmaps")
	})
	eventually(t, 60*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Widget", ns, "w") })
	sa := uidOf(t, c, "ServiceAccount", ns, "g")
	out := mustKubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=g,reason=Forbidden", "-o", "jsonpath={range .items[*]}{.count}{\"\\n\"}{end}")
	if strings.TrimSpace(out) != "1" {
		t.Errorf("Forbidden events of g (counts, one a line) = %q, want one, once", out)
	}
	u.SetRules(operatorRules([]string{fbGroup}, nil))
	eventually(t, 60*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Gadget", ns, "g") })
	if now := uidOf(t, c, "ServiceAccount", ns, "g"); now != sa {
		t.Fatalf("the Gadget's ServiceAccount was recreated (uid %s -> %s)", sa, now)
	}
	uidOf(t, c, "ConfigMap", ns, "g")
}

// TestForbiddenListPrunesNothing: the Gadget has a ConfigMap; the role
// loses list and watch of ConfigMaps, and the spec drops the ConfigMap.
// The API server cannot confirm the CR's children: the ConfigMap stays and
// the CR reads Forbidden. With the right back, the ConfigMap is pruned.
func TestForbiddenListPrunesNothing(t *testing.T) {
	ns := clustertest.Namespace(t)
	u := startLimited(t, ns, map[string]string{"gadget": fbGadgetTemplate}, nil)
	c := newClient(t)
	mustKubectl(t, fbCR("Gadget", ns, "g", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Gadget", ns, "g") })
	cm := uidOf(t, c, "ConfigMap", ns, "g")
	u.SetRules(operatorRules([]string{fbGroup}, map[string][]string{"configmaps": {"list", "watch"}}))
	mustKubectl(t, "", "-n", ns, "patch", "gadget/g", "--type=merge", "-p", `{"spec":{"config":false}}`)
	eventually(t, 60*time.Second, func() string {
		return forbidden(t, c, "Gadget", ns, "g", "list the children of Gadget "+ns+"/g", "forbidden for "+u.Username(), "verb list, resource configmaps")
	})
	if now := uidOf(t, c, "ConfigMap", ns, "g"); now != cm {
		t.Fatalf("the ConfigMap was replaced (uid %s -> %s)", cm, now)
	}
	u.SetRules(operatorRules([]string{fbGroup}, nil))
	eventually(t, 60*time.Second, func() string {
		if why := crConverged(t, c, fbGroup+"/v1", "Gadget", ns, "g"); why != "" {
			return why
		}
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, objOf("v1", "ConfigMap"))
		if !apierrors.IsNotFound(err) {
			return "the ConfigMap the spec dropped is not pruned: " + errText(err)
		}
		return ""
	})
}

// TestForbiddenReferenceIsNotNotFound: the role may not read ConfigMaps,
// which the Lookup references: it reads Forbidden, not ReferenceNotFound,
// and once the role grants them it converges.
func TestForbiddenReferenceIsNotNotFound(t *testing.T) {
	ns := clustertest.Namespace(t)
	u := startLimited(t, ns, map[string]string{"lookup": fbLookupTemplate}, nil)
	u.SetRules(operatorRules([]string{fbGroup}, map[string][]string{"configmaps": {"get", "list", "watch"}}))
	c := newClient(t)
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+ns+"}\ndata: {a: \"1\"}\n", "apply", "-f", "-")
	mustKubectl(t, fbCR("Lookup", ns, "l", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		return forbidden(t, c, "Lookup", ns, "l", "list ConfigMap in namespace "+ns, "forbidden for "+u.Username(), "verb list")
	})
	u.SetRules(operatorRules([]string{fbGroup}, nil))
	eventually(t, 60*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Lookup", ns, "l") })
}

// TestNamespaceNotBound: the Widget kind is bound in one namespace: its CR
// there converges, its CR in another reads NamespaceNotBound and has no
// children.
func TestNamespaceNotBound(t *testing.T) {
	c, a, b := startBoundWidget(t, func(idNS, sa, _ string, rules []rbacv1.PolicyRule) {
		grantRoles(t, idNS, map[string][]rbacv1.PolicyRule{sa: rules})
	})
	eventually(t, 60*time.Second, func() string {
		cr := getObj(t, c, fbGroup+"/v1", "Widget", b, "w")
		return stalledCR(cr, "NamespaceNotBound", "namespace "+b, "bound in namespaces "+a+" only")
	})
	err := c.Get(context.Background(), client.ObjectKey{Namespace: b, Name: "w"}, objOf("v1", "ServiceAccount"))
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the Widget of a namespace it is not bound in has a child: %v", err)
	}
}

func objOf(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

// fbRetainerTemplate is fbGadgetTemplate whose ConfigMap is released, not
// deleted, with its CR: a Retainer carries cueop's finalizer.
var fbRetainerTemplate = strings.NewReplacer("package gadget", "package retainer", `kind: "Gadget"`, `kind: "Retainer"`).
	Replace(fbGadgetTemplate) + "policies: settings: onDelete: \"retain\"\n"

// TestForbiddenDeletionKeepsFinalizer: a Retainer is deleted while its role
// may not list ConfigMaps, so its children cannot be confirmed from the
// API server. It stays, with its finalizer, Ready=False Forbidden naming
// the list and the verb; its ConfigMap is kept, still owned. Once the role
// grants the list again the deletion completes, no restart: the ConfigMap
// is released (no owner) and kept.
func TestForbiddenDeletionKeepsFinalizer(t *testing.T) {
	ns := clustertest.Namespace(t)
	u := startLimited(t, ns, map[string]string{"retainer": fbRetainerTemplate}, nil)
	c := newClient(t)
	mustKubectl(t, fbCR("Retainer", ns, "g", ""), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return crConverged(t, c, fbGroup+"/v1", "Retainer", ns, "g") })
	cm := uidOf(t, c, "ConfigMap", ns, "g")
	u.SetRules(operatorRules([]string{fbGroup}, map[string][]string{"configmaps": {"list", "watch"}}))
	refusedRetainerDeletion(t, c, ns, cm, "list the children of Retainer "+ns+"/g", "forbidden for "+u.Username(), "verb list, resource configmaps")
	u.SetRules(operatorRules([]string{fbGroup}, nil))
	retainerReleased(t, c, ns, cm)
}

// refusedRetainerDeletion deletes the Retainer g of ns, waits until it
// reads Forbidden naming every part and checks that it stays, with its
// finalizer, and that its ConfigMap cm is kept and still owned.
func refusedRetainerDeletion(t *testing.T, c client.Client, ns string, cm types.UID, parts ...string) {
	t.Helper()
	mustKubectl(t, "", "-n", ns, "delete", "retainers."+fbGroup+"/g", "--wait=false")
	eventually(t, 60*time.Second, func() string {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, objOf(fbGroup+"/v1", "Retainer"))
		if err != nil {
			return "" // the check below says what was lost
		}
		return forbidden(t, c, "Retainer", ns, "g", parts...)
	})
	cr := objOf(fbGroup+"/v1", "Retainer")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, cr); err != nil {
		t.Fatalf("the Retainer went while its children could not be listed: %v", err)
	}
	if cr.GetDeletionTimestamp() == nil || !slices.ContainsFunc(cr.GetFinalizers(), func(f string) bool { return strings.HasPrefix(f, "cueop.dev/") }) {
		t.Fatalf("the Retainer refused its deletion without its finalizers: deletionTimestamp %v, finalizers %v", cr.GetDeletionTimestamp(), cr.GetFinalizers())
	}
	if kept := getObj(t, c, "v1", "ConfigMap", ns, "g"); kept.GetUID() != cm || len(kept.GetOwnerReferences()) == 0 {
		t.Fatalf("the retained ConfigMap: uid %s (was %s), owners %v; want it kept, still owned", kept.GetUID(), cm, kept.GetOwnerReferences())
	}
}

// retainerReleased waits until the deleted Retainer g of ns is gone and
// checks that its ConfigMap cm is kept and released (no owner).
func retainerReleased(t *testing.T, c client.Client, ns string, cm types.UID) {
	t.Helper()
	eventually(t, 90*time.Second, func() string {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, objOf(fbGroup+"/v1", "Retainer"))
		if !apierrors.IsNotFound(err) {
			return "the Retainer is not deleted once its identity may list its children: " + errText(err)
		}
		return ""
	})
	if kept := getObj(t, c, "v1", "ConfigMap", ns, "g"); kept.GetUID() != cm || len(kept.GetOwnerReferences()) != 0 {
		t.Fatalf("the retained ConfigMap: uid %s (was %s), owners %v; want it kept and released", kept.GetUID(), cm, kept.GetOwnerReferences())
	}
}
