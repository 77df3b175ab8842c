package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/localcluster/clustertest"
)

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
