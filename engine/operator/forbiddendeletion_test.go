package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	mustKubectl(t, "", "-n", ns, "delete", "retainers."+fbGroup+"/g", "--wait=false")
	eventually(t, 60*time.Second, func() string {
		return forbidden(t, c, "Retainer", ns, "g", "list the children of Retainer "+ns+"/g", "forbidden for "+u.Username(), "verb list, resource configmaps")
	})
	cr := getObj(t, c, fbGroup+"/v1", "Retainer", ns, "g")
	if cr.GetDeletionTimestamp() == nil || !slices.ContainsFunc(cr.GetFinalizers(), func(f string) bool { return strings.HasPrefix(f, "cueop.dev/") }) {
		t.Fatalf("the Retainer refused its deletion without its finalizers: deletionTimestamp %v, finalizers %v", cr.GetDeletionTimestamp(), cr.GetFinalizers())
	}
	if now := uidOf(t, c, "ConfigMap", ns, "g"); now != cm {
		t.Fatalf("the ConfigMap was replaced (uid %s -> %s)", cm, now)
	}
	u.SetRules(operatorRules([]string{fbGroup}, nil))
	eventually(t, 90*time.Second, func() string {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, objOf(fbGroup+"/v1", "Retainer"))
		if !apierrors.IsNotFound(err) {
			return "the Retainer is not deleted once the role is fixed: " + errText(err)
		}
		return ""
	})
	if kept := getObj(t, c, "v1", "ConfigMap", ns, "g"); kept.GetUID() != cm || len(kept.GetOwnerReferences()) != 0 {
		t.Fatalf("the retained ConfigMap: uid %s (was %s), owners %v; want it kept and released", kept.GetUID(), cm, kept.GetOwnerReferences())
	}
}
