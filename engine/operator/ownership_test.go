package operator_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// holderTemplate is a kind whose ConfigMap, and PersistentVolumeClaim when
// asked, are named after the CR, as a tenant would use to reach another's
// objects; spec.adopt is the ConfigMap's adopt policy.
const holderTemplate = `package holder

resource: {group: "owntest.example.com", version: "v1", kind: "Holder"}

#Spec: {
	text:  *"hello" | string
	pvc:   *false | bool
	adopt: *"released" | "never" | "uncontrolled"
}

` + testkit.ParentObserved + `
children: {
	config: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.metadata.name, data: text: parent.spec.text}
	if parent.spec.pvc {
		data: {
			apiVersion: "v1"
			kind:       "PersistentVolumeClaim"
			metadata: name: parent.metadata.name
			spec: {accessModes: ["ReadWriteOnce"], resources: requests: storage: "1Gi"}
		}
	}
}
policies: config: adopt: parent.spec.adopt
ready: observed.config != _|_
`

var holderGVK = schema.GroupVersionKind{Group: "owntest.example.com", Version: "v1", Kind: "Holder"}

// ownershipTemplates is a copy of the project's templates with the Holder
// kind beside them; the Holder CRD the operator installs is deleted at the
// test's end.
func ownershipTemplates(t *testing.T) string {
	t.Helper()
	dir := copyTemplates(t)
	testkit.WriteKind(t, dir, "holder", holderTemplate)
	clustertest.DeleteCRDsAtEnd(t, "holders.owntest.example.com")
	return dir
}

func applyHolder(t *testing.T, ns, name, spec string) {
	t.Helper()
	mustKubectl(t, fmt.Sprintf("apiVersion: owntest.example.com/v1\nkind: Holder\nmetadata: {name: %q, namespace: %s}\nspec: %s\n", name, ns, spec), "apply", "-f", "-")
}

// conflicted says why the CR of gvk is not Stalled with reason ChildConflict
// and a message holding every part, or "".
func conflicted(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string, parts ...string) string {
	cr := object(t, c, gvk, ns, name)
	if cr == nil {
		return gvk.Kind + " " + name + " not found"
	}
	cond := conditionOf(cr, "Stalled")
	if cond == nil || cond["status"] != "True" || cond["reason"] != wellknown.ReasonChildConflict {
		return fmt.Sprintf("%s %s: Stalled = %v", gvk.Kind, name, cond)
	}
	for _, p := range parts {
		if !strings.Contains(fmt.Sprint(cond["message"]), p) {
			return fmt.Sprintf("%s %s: Stalled message %q lacks %q", gvk.Kind, name, cond["message"], p)
		}
	}
	if conditionStatus(cr, "Ready") != "False" {
		return gvk.Kind + " " + name + ": Ready is not False"
	}
	return ""
}

// untouched fails unless o is still before: same uid and resourceVersion
// (not a write since), no owner reference.
func untouched(t *testing.T, o, before *unstructured.Unstructured) {
	t.Helper()
	if o == nil {
		t.Fatalf("%s %s was deleted", before.GetKind(), before.GetName())
	}
	if o.GetUID() != before.GetUID() || o.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("%s %s changed: uid %s -> %s, resourceVersion %s -> %s", o.GetKind(), o.GetName(),
			before.GetUID(), o.GetUID(), before.GetResourceVersion(), o.GetResourceVersion())
	}
	if refs := o.GetOwnerReferences(); len(refs) != 0 {
		t.Fatalf("%s %s has owner references %v", o.GetKind(), o.GetName(), refs)
	}
}

// deleteAndWait deletes a CR and waits until it is gone and the garbage
// collector deleted gone, one of the children the CR did create: the sign
// that it went through the CR's dependents.
func deleteAndWait(t *testing.T, c client.Client, ns, ref string, gvk schema.GroupVersionKind, gone string) {
	t.Helper()
	mustKubectl(t, "", "-n", ns, "delete", ref, "--wait=true", "--timeout=60s")
	// The garbage collector learns of a new CRD's resource from discovery,
	// every 30 s.
	eventually(t, 90*time.Second, func() string {
		if object(t, c, gvk, ns, gone) != nil {
			return gvk.Kind + " " + gone + " not garbage-collected yet"
		}
		return ""
	})
}

// TestHostileTenantChangesNothing: a tenant names a RedisCluster after
// another application's Service, and a Holder after the namespace's
// kube-root-ca.crt. Neither object changes (selector, data, owner
// references, resourceVersion), both CRs stall with ChildConflict naming
// the object and "no controller", and deleting the CRs leaves both.
func TestHostileTenantChangesNothing(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := newClient(t)
	mustKubectl(t, "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: "+ns+"}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n", "apply", "-f", "-")
	svc := object(t, c, serviceGVK, ns, "web")
	root := exists(t, c, configMapGVK, ns, "kube-root-ca.crt")
	a := startOperator(t, ownershipTemplates(t), ns, nil)
	waitCRD(t)
	clustertest.WaitEstablished(t, 60*time.Second, "holders.owntest.example.com")
	mustKubectl(t, redisYAML(ns, "web", 1, "7.0"), "apply", "-f", "-")
	applyHolder(t, ns, "kube-root-ca.crt", "{}")
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, redisGVK, ns, "web", "children.service: Service "+ns+"/web exists with no controller")
	})
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, holderGVK, ns, "kube-root-ca.crt", "children.config: ConfigMap "+ns+"/kube-root-ca.crt exists with no controller")
	})
	a.Settled(t, 0, 60*time.Second)
	untouched(t, object(t, c, serviceGVK, ns, "web"), svc)
	untouched(t, object(t, c, configMapGVK, ns, "kube-root-ca.crt"), root)
	if sel, _, _ := unstructured.NestedStringMap(object(t, c, serviceGVK, ns, "web").Object, "spec", "selector"); !reflect.DeepEqual(sel, map[string]string{"app": "web"}) {
		t.Fatalf("Service web's selector is %v", sel)
	}

	deleteAndWait(t, c, ns, "rediscluster/web", podGVK, "web-0")
	mustKubectl(t, "", "-n", ns, "delete", "holder/kube-root-ca.crt", "--wait=true", "--timeout=60s")
	untouched(t, object(t, c, serviceGVK, ns, "web"), svc)
	untouched(t, object(t, c, configMapGVK, ns, "kube-root-ca.crt"), root)
}

// TestForgedReleaseMarkNotAdopted: a tenant makes Service shop, of type
// NodePort with an externalIP, marked as released from RedisCluster shop
// (the cueop.dev/released-from annotation alone, then with a made-up
// cueop.dev/release-proof), before a colleague creates RedisCluster shop.
// The RedisCluster stalls with ChildConflict saying the mark is not
// proven, and the Service is not adopted: not written at all, its
// NodePort and externalIP as the tenant made them.
func TestForgedReleaseMarkNotAdopted(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := newClient(t)
	a := startOperator(t, copyTemplates(t), ns, nil)
	waitCRD(t)
	for _, tc := range []struct{ name, proof, why string }{
		{"shop", "", "it has no cueop.dev/release-proof annotation: cueop did not release it"},
		{"shop2", "\n    cueop.dev/release-proof: v1:" + strings.Repeat("A", 43), "its cueop.dev/release-proof annotation does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustKubectl(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: "+tc.name+"\n  namespace: "+ns+
				"\n  annotations:\n    cueop.dev/released-from: RedisCluster.cache.example.com "+ns+"/"+tc.name+tc.proof+
				"\nspec: {type: NodePort, externalIPs: [192.0.2.10], selector: {app: tenant}, ports: [{name: redis, port: 6379}]}\n", "apply", "-f", "-")
			svc := object(t, c, serviceGVK, ns, tc.name)
			nodePort, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			mustKubectl(t, redisYAML(ns, tc.name, 1, "7.0"), "apply", "-f", "-")
			eventually(t, 60*time.Second, func() string {
				return conflicted(t, c, redisGVK, ns, tc.name, "children.service: Service "+ns+"/"+tc.name+" exists with no controller, marked released from RedisCluster.cache.example.com "+ns+"/"+tc.name, tc.why)
			})
			a.Settled(t, 0, 60*time.Second)
			now := object(t, c, serviceGVK, ns, tc.name)
			untouched(t, now, svc)
			ports, _, _ := unstructured.NestedSlice(now.Object, "spec", "ports")
			ips, _, _ := unstructured.NestedStringSlice(now.Object, "spec", "externalIPs")
			typ, _, _ := unstructured.NestedString(now.Object, "spec", "type")
			if typ != "NodePort" || !reflect.DeepEqual(ports, nodePort) || !reflect.DeepEqual(ips, []string{"192.0.2.10"}) {
				t.Fatalf("Service %s changed: type %s, ports %v (were %v), externalIPs %v", tc.name, typ, ports, nodePort, ips)
			}
		})
	}
}

// TestTwoCRsRenderingOneName: a RedisCluster and a StaticSite both named
// shop render Service shop. The first keeps it; the second stalls with
// ChildConflict naming the Service and its controller, and writes to it
// at most once (its create-only apply, refused): not after, whatever
// reconciles it. Deleting the second leaves the Service to the first.
func TestTwoCRsRenderingOneName(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := newClient(t)
	cfg, ct := testkit.CountRequests(clustertest.Config())
	a := startOperator(t, copyTemplates(t), ns, cfg)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "shop", 1, "7.0"), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string { return readyStatus(t, c, ns, "shop", 1) })
	svc := object(t, c, serviceGVK, ns, "shop")
	owner := getCR(t, c, ns, "shop").GetUID()

	clustertest.WaitEstablished(t, 60*time.Second, "staticsites.web.example.com")
	mustKubectl(t, "apiVersion: web.example.com/v1\nkind: StaticSite\nmetadata: {name: shop, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	site := schema.GroupVersionKind{Group: "web.example.com", Version: "v1", Kind: "StaticSite"}
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, site, ns, "shop", "children.service: Service "+ns+"/shop exists and is controlled by RedisCluster "+ns+"/shop")
	})
	a.Settled(t, 0, 60*time.Second)
	w := testkit.Strings(ct.Writes(0))
	if n := countPath(w, "services/shop"); n > 2 {
		t.Fatalf("%d write requests to Service shop, want the RedisCluster's create and at most one refused create-only apply: %v", n, w)
	}
	n := len(w)
	for i := range 3 {
		touchReconciled(t, a, "cueop-staticsite", "staticsite/shop", ns, i)
	}
	a.Settled(t, 0, 60*time.Second)
	if got := countPath(testkit.Strings(ct.Writes(n)), "services/shop"); got != 0 {
		t.Fatalf("%d write requests to Service shop by reconciles of the StaticSite in conflict", got)
	}
	now := object(t, c, serviceGVK, ns, "shop")
	if now.GetResourceVersion() != svc.GetResourceVersion() {
		t.Fatalf("Service shop written since the RedisCluster converged: resourceVersion %s -> %s", svc.GetResourceVersion(), now.GetResourceVersion())
	}

	deleteAndWait(t, c, ns, "staticsite/shop", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "shop")
	now = object(t, c, serviceGVK, ns, "shop")
	if now == nil || now.GetUID() != svc.GetUID() || len(now.GetOwnerReferences()) != 1 || now.GetOwnerReferences()[0].UID != owner {
		t.Fatalf("Service shop after the StaticSite's deletion: %v", now)
	}
	eventually(t, 30*time.Second, func() string { return readyStatus(t, c, ns, "shop", 1) })
}

// touchReconciled annotates the CR ref (kind/name) and waits until a
// reconcile of it ended; controller is its kind's ("cueop-<package>").
func touchReconciled(t *testing.T, a *operatortest.Activity, controller, ref, ns string, i int) {
	t.Helper()
	kv := []string{"controller", controller, "namespace", ns, "name", strings.SplitN(ref, "/", 2)[1]}
	before := a.ReconcilesOf(kv...)
	mustKubectl(t, "", "-n", ns, "annotate", "--overwrite", ref, fmt.Sprintf("test.cueop.dev/touch=%d", i))
	eventually(t, 30*time.Second, func() string {
		if a.ReconcilesOf(kv...) == before {
			return "no reconcile of " + ref + " since it was touched"
		}
		return ""
	})
}

// TestAdoptionIsOptIn: a user's ConfigMap and PersistentVolumeClaim of a
// Holder's names keep their data while the Holder stalls; the ConfigMap is
// taken over once the Holder's policy says adopt: "uncontrolled", keeping
// the user's other keys; a ConfigMap another object controls is never taken
// over; deleting the Holders leaves the user's claim.
func TestAdoptionIsOptIn(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := newClient(t)
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine, namespace: "+ns+"}\ndata: {text: mine, extra: kept}\n", "apply", "-f", "-")
	mustKubectl(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: vol, namespace: "+ns+", labels: {team: data}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}\n", "apply", "-f", "-")
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: boss, namespace: "+ns+"}\n", "apply", "-f", "-")
	boss := object(t, c, configMapGVK, ns, "boss")
	mustKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs, namespace: %s, ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: boss, uid: %s, controller: true}]}\ndata: {text: theirs}\n", ns, boss.GetUID()), "apply", "-f", "-")
	mine, vol, theirs := object(t, c, configMapGVK, ns, "mine"), object(t, c, pvcGVK, ns, "vol"), object(t, c, configMapGVK, ns, "theirs")
	a := startOperator(t, ownershipTemplates(t), ns, nil)
	clustertest.WaitEstablished(t, 60*time.Second, "holders.owntest.example.com")
	applyHolder(t, ns, "mine", "{}")
	applyHolder(t, ns, "vol", "{pvc: true}")
	applyHolder(t, ns, "theirs", "{adopt: uncontrolled}")
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, holderGVK, ns, "mine", "ConfigMap "+ns+"/mine exists with no controller", `adopt: "uncontrolled" would take it over`)
	})
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, holderGVK, ns, "vol", "children.data: PersistentVolumeClaim "+ns+"/vol exists with no controller")
	})
	eventually(t, 60*time.Second, func() string {
		return conflicted(t, c, holderGVK, ns, "theirs", "ConfigMap "+ns+"/theirs exists and is controlled by ConfigMap "+ns+"/boss")
	})
	a.Settled(t, 0, 60*time.Second)
	untouched(t, object(t, c, configMapGVK, ns, "mine"), mine)
	untouched(t, object(t, c, pvcGVK, ns, "vol"), vol)
	if got := object(t, c, configMapGVK, ns, "theirs"); got.GetResourceVersion() != theirs.GetResourceVersion() {
		t.Fatalf("ConfigMap theirs changed: %v", got)
	}

	mustKubectl(t, "", "-n", ns, "patch", "holder", "mine", "--type=merge", "-p", `{"spec":{"adopt":"uncontrolled"}}`)
	holder := object(t, c, holderGVK, ns, "mine")
	eventually(t, 60*time.Second, func() string {
		return crConverged(t, c, "owntest.example.com/v1", "Holder", ns, "mine")
	})
	got := object(t, c, configMapGVK, ns, "mine")
	if got.GetUID() != mine.GetUID() || len(got.GetOwnerReferences()) != 1 || got.GetOwnerReferences()[0].UID != holder.GetUID() {
		t.Fatalf("ConfigMap mine not adopted in place: uid %s (was %s), owners %v", got.GetUID(), mine.GetUID(), got.GetOwnerReferences())
	}
	if data, _, _ := unstructured.NestedStringMap(got.Object, "data"); data["text"] != "hello" || data["extra"] != "kept" {
		t.Fatalf("adopted ConfigMap data %v, want the Holder's text and the user's extra key", data)
	}
	out := mustKubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=mine", "-o", "custom-columns=R:.reason,M:.message")
	if !strings.Contains(out, "Adopted") {
		t.Errorf("no Adopted event:\n%s", out)
	}

	deleteAndWait(t, c, ns, "holder/vol", configMapGVK, "vol")
	untouched(t, object(t, c, pvcGVK, ns, "vol"), vol)
}

// TestReleasedChildReadopted: a ConfigMap a Keeper retained (released when
// the Keeper was deleted) is taken over again by a new Keeper of the same
// name, in place with the data it gained meanwhile, and loses its
// released-from mark.
func TestReleasedChildReadopted(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "again", "kept: true")
	uid := string(exists(t, c, configMapGVK, ns, "again-kept").GetUID())
	eventually(t, 30*time.Second, func() string {
		return crConverged(t, c, "lifecycle.example.com/v1", "Keeper", ns, "again")
	})
	mustKubectl(t, "", "-n", ns, "delete", "keeper", "again", "--wait=true", "--timeout=60s")
	eventually(t, 30*time.Second, func() string { return released(object(t, c, configMapGVK, ns, "again-kept")) })
	ann := object(t, c, configMapGVK, ns, "again-kept").GetAnnotations()
	if from := ann[wellknown.AnnotationReleasedFrom]; from != "Keeper.lifecycle.example.com "+ns+"/again" {
		t.Fatalf("released-from = %q", from)
	}
	if proof := ann[wellknown.AnnotationReleaseProof]; !strings.HasPrefix(proof, "v1:") {
		t.Fatalf("release-proof = %q", proof)
	}
	// The key is the operator's, in a Secret of its namespace (the test's).
	exists(t, c, schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, ns, operator.ReleaseKeySecret)
	mustKubectl(t, "", "-n", ns, "patch", "configmap", "again-kept", "--type=merge", "-p", `{"data":{"user":"added"}}`)

	applyKeeper(t, ns, "again", "kept: true")
	keeper := object(t, c, keeperGVK, ns, "again")
	eventually(t, 60*time.Second, func() string {
		if why := crConverged(t, c, "lifecycle.example.com/v1", "Keeper", ns, "again"); why != "" {
			return why
		}
		cm := object(t, c, configMapGVK, ns, "again-kept")
		if refs := cm.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != keeper.GetUID() {
			return fmt.Sprintf("owner references %v", refs)
		}
		if from, ok := cm.GetAnnotations()[wellknown.AnnotationReleasedFrom]; ok {
			return "released-from still " + from
		}
		if proof, ok := cm.GetAnnotations()[wellknown.AnnotationReleaseProof]; ok {
			return "release-proof still " + proof
		}
		return ""
	})
	cm := object(t, c, configMapGVK, ns, "again-kept")
	sameObject(t, cm, uid)
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["user"] != "added" || data["note"] == "" {
		t.Fatalf("re-adopted ConfigMap data %v", data)
	}
}
