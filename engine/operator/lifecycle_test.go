package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/reconcile"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The lifecycle tests run the Keeper test kind of testdata/lifecycle: each
// spec field turns on a child and its policy.
const lifecycleTemplates = "../../testdata/lifecycle/templates"

var keeperGVK = schema.GroupVersionKind{Group: "lifecycle.example.com", Version: "v1", Kind: "Keeper"}

// startKeepers runs an operator on the lifecycle templates in a fresh
// namespace and waits for the Keeper CRD.
func startKeepers(t *testing.T) (string, client.Client) {
	t.Helper()
	ns := clustertest.Namespace(t)
	startOperator(t, lifecycleTemplates, ns, nil)
	waitLifecycleCRD(t, "keepers")
	return ns, newClient(t)
}

// waitLifecycleCRD waits for the CRD of a lifecycle test kind, by plural.
func waitLifecycleCRD(t *testing.T, plural string) {
	t.Helper()
	clustertest.WaitEstablished(t, 30*time.Second, plural+".lifecycle.example.com")
}

func applyKeeper(t *testing.T, ns, name string, spec ...string) {
	t.Helper()
	y := "apiVersion: lifecycle.example.com/v1\nkind: Keeper\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nspec:\n"
	for _, s := range spec {
		y += "  " + s + "\n"
	}
	mustKubectl(t, y, "apply", "--server-side", "--field-manager=test", "-f", "-")
}

func patchKeeper(t *testing.T, ns, name, spec string) {
	t.Helper()
	mustKubectl(t, "", "-n", ns, "patch", "keeper", name, "--type=merge", "-p", `{"spec":`+spec+`}`)
}

// object reads an object, nil when it does not exist.
var object = clustertest.Lookup

var (
	pvcGVK         = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	serviceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	configMapGVK   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	statefulSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
)

// exists waits for an object and returns it.
func exists(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var o *unstructured.Unstructured
	eventually(t, 30*time.Second, func() string {
		if o = object(t, c, gvk, ns, name); o == nil {
			return gvk.Kind + " " + name + " not created"
		}
		return ""
	})
	return o
}

func keeperStalled(t *testing.T, c client.Client, ns, name string, parts ...string) string {
	cr := object(t, c, keeperGVK, ns, name)
	cond := conditionOf(cr, "Stalled")
	if cond == nil || cond["status"] != "True" || cond["reason"] != "ImmutableChange" {
		return fmt.Sprintf("Stalled = %v", cond)
	}
	for _, p := range parts {
		if !strings.Contains(fmt.Sprint(cond["message"]), p) {
			return fmt.Sprintf("Stalled message %q lacks %q", cond["message"], p)
		}
	}
	return ""
}

// sameObject fails unless o is still the object of uid, not being deleted.
func sameObject(t *testing.T, o *unstructured.Unstructured, uid string) {
	t.Helper()
	if o == nil || string(o.GetUID()) != uid || o.GetDeletionTimestamp() != nil {
		t.Fatalf("the object of uid %s was deleted or replaced: %v", uid, o)
	}
}

// TestImmutablePVCChangeStalls changes a PersistentVolumeClaim's storage
// class: the claim is kept with its data and the Keeper stalls.
func TestImmutablePVCChangeStalls(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "pvc", "storageClass: fast")
	uid := string(exists(t, c, pvcGVK, ns, "pvc-data").GetUID())
	patchKeeper(t, ns, "pvc", `{"storageClass":"slow"}`)
	eventually(t, 30*time.Second, func() string {
		return keeperStalled(t, c, ns, "pvc", "children.data: PersistentVolumeClaim "+ns+"/pvc-data", "spec: ", "never recreated")
	})
	sameObject(t, object(t, c, pvcGVK, ns, "pvc-data"), uid)
	if got := object(t, c, pvcGVK, ns, "pvc-data").Object["spec"].(map[string]any)["storageClassName"]; got != "fast" {
		t.Errorf("storageClassName = %v, want fast", got)
	}
	out := mustKubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=pvc", "-o", "custom-columns=R:.reason")
	if !strings.Contains(out, "ImmutableChange") {
		t.Errorf("no ImmutableChange event:\n%s", out)
	}
}

// TestImmutableServiceChangeStallsUnlessOptedIn makes a Service headless
// (its clusterIP may not change): the Keeper stalls and the Service stays,
// until the template opts the child in to recreation.
func TestImmutableServiceChangeStallsUnlessOptedIn(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "svc", "service: true")
	uid := string(exists(t, c, serviceGVK, ns, "svc").GetUID())
	patchKeeper(t, ns, "svc", `{"headless":true}`)
	eventually(t, 30*time.Second, func() string {
		return keeperStalled(t, c, ns, "svc", "children.service: Service "+ns+"/svc", "spec.clusterIPs", `policies: "service": recreate: true`)
	})
	sameObject(t, object(t, c, serviceGVK, ns, "svc"), uid)
	if f := object(t, c, keeperGVK, ns, "svc").GetFinalizers(); len(f) != 0 {
		t.Errorf("finalizers %v on a Keeper that retains nothing", f)
	}

	patchKeeper(t, ns, "svc", `{"recreateService":true}`)
	eventually(t, 30*time.Second, func() string {
		s := object(t, c, serviceGVK, ns, "svc")
		if s == nil || string(s.GetUID()) == uid {
			return "Service not recreated yet"
		}
		if ip, _, _ := unstructured.NestedString(s.Object, "spec", "clusterIP"); ip != "None" {
			return "clusterIP " + ip
		}
		if st := conditionStatus(object(t, c, keeperGVK, ns, "svc"), "Stalled"); st != "False" {
			return "Stalled " + st
		}
		return ""
	})
}

// TestStatefulSetRecreatedOrphansPods changes a StatefulSet's
// podManagementPolicy with recreation opted in: the StatefulSet is deleted
// with its Pods orphaned, and the new one adopts the same Pods.
func TestStatefulSetRecreatedOrphansPods(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "sts", "statefulSet: true", "recreateStatefulSet: true")
	var pods map[string]string // name -> uid
	eventually(t, 90*time.Second, func() string {
		if conditionStatus(object(t, c, keeperGVK, ns, "sts"), "Ready") != "True" {
			return "Keeper not Ready"
		}
		pods = map[string]string{}
		for _, p := range listPodsBy(t, c, ns, "sts") {
			pods[p.GetName()] = string(p.GetUID())
		}
		if len(pods) != 2 {
			return fmt.Sprintf("%d pods", len(pods))
		}
		return ""
	})
	old := string(object(t, c, statefulSetGVK, ns, "sts-db").GetUID())
	patchKeeper(t, ns, "sts", `{"parallel":true}`)
	eventually(t, 60*time.Second, func() string {
		s := object(t, c, statefulSetGVK, ns, "sts-db")
		if s == nil || string(s.GetUID()) == old {
			return "StatefulSet not recreated yet"
		}
		for _, p := range listPodsBy(t, c, ns, "sts") {
			if pods[p.GetName()] != string(p.GetUID()) {
				return fmt.Sprintf("pod %s is new (uid %s): the pods were deleted", p.GetName(), p.GetUID())
			}
			refs := p.GetOwnerReferences()
			if len(refs) != 1 || refs[0].UID != s.GetUID() {
				return fmt.Sprintf("pod %s owned by %v, not yet adopted by %s", p.GetName(), refs, s.GetUID())
			}
		}
		return ""
	})
	if got := len(listPodsBy(t, c, ns, "sts")); got != 2 {
		t.Errorf("%d pods, want the same 2", got)
	}
}

func listPodsBy(t *testing.T, c client.Client, ns, keeper string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"keeper": keeper}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// released says how o still belongs to cueop, or "".
func released(o *unstructured.Unstructured) string {
	if o == nil {
		return "deleted"
	}
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		return fmt.Sprintf("owner references %v", refs)
	}
	for k := range o.GetLabels() {
		if k == wellknown.LabelManagedBy || strings.HasPrefix(k, "cueop.dev/") {
			return "label " + k
		}
	}
	for k := range o.GetAnnotations() {
		if strings.HasPrefix(k, "cueop.dev/") && k != wellknown.AnnotationReleasedFrom && k != wellknown.AnnotationReleaseProof {
			return "annotation " + k
		}
	}
	if from := o.GetAnnotations()[wellknown.AnnotationReleasedFrom]; !strings.HasPrefix(from, "Keeper.lifecycle.example.com ") && !strings.HasPrefix(from, "Depot.") {
		return fmt.Sprintf("annotation %s is %q", wellknown.AnnotationReleasedFrom, from)
	}
	if proof := o.GetAnnotations()[wellknown.AnnotationReleaseProof]; !strings.HasPrefix(proof, "v1:") {
		return fmt.Sprintf("annotation %s is %q", wellknown.AnnotationReleaseProof, proof)
	}
	for _, e := range o.GetManagedFields() {
		if e.Manager == "cueop" {
			return fmt.Sprintf("managedFields entry of cueop (%s)", e.Operation)
		}
	}
	return ""
}

// TestPruneNeverReleasesChild stops rendering a ConfigMap whose policy is
// prune: never: it stays, released, its data intact, and an Event says so.
func TestPruneNeverReleasesChild(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "prune", "scratch: true")
	uid := string(exists(t, c, configMapGVK, ns, "prune-scratch").GetUID())
	if ann := object(t, c, configMapGVK, ns, "prune-scratch").GetAnnotations(); ann[wellknown.AnnotationPrune] != "never" {
		t.Fatalf("annotations %v lack the prune policy", ann)
	}
	patchKeeper(t, ns, "prune", `{"scratch":false}`)
	eventually(t, 30*time.Second, func() string { return released(object(t, c, configMapGVK, ns, "prune-scratch")) })
	cm := object(t, c, configMapGVK, ns, "prune-scratch")
	sameObject(t, cm, uid)
	if note, _, _ := unstructured.NestedString(cm.Object, "data", "note"); note == "" {
		t.Errorf("data lost: %v", cm.Object["data"])
	}
	out := mustKubectl(t, "", "-n", ns, "get", "events", "--field-selector", "involvedObject.name=prune", "-o", "custom-columns=R:.reason,M:.message")
	if !strings.Contains(out, "Released") || !strings.Contains(out, "prune-scratch") {
		t.Errorf("no Released event naming the ConfigMap:\n%s", out)
	}
	// Someone else may now apply it without a conflict with cueop.
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: prune-scratch\n  namespace: "+ns+"\ndata:\n  note: mine\n",
		"apply", "--server-side", "--field-manager=someone", "-f", "-")
}

// TestOnDeleteRetainKeepsChild deletes a Keeper with a child whose policy
// is onDelete: retain: the garbage collector deletes the other child, the
// retained one stays, released, and the finalizer goes with the Keeper.
func TestOnDeleteRetainKeepsChild(t *testing.T) {
	ns, c := startKeepers(t)
	applyKeeper(t, ns, "del", "kept: true", "service: true")
	uid := string(exists(t, c, configMapGVK, ns, "del-kept").GetUID())
	exists(t, c, serviceGVK, ns, "del")
	eventually(t, 30*time.Second, func() string {
		if f := object(t, c, keeperGVK, ns, "del").GetFinalizers(); !slices.Contains(f, "cueop.dev/retain") {
			return fmt.Sprintf("finalizers %v", f)
		}
		return ""
	})
	mustKubectl(t, "", "-n", ns, "delete", "keeper", "del", "--wait=false")
	// The garbage collector learns of a new CRD's resource from discovery,
	// every 30 s: the first Keeper's children may wait that long.
	eventually(t, 90*time.Second, func() string {
		if k := object(t, c, keeperGVK, ns, "del"); k != nil {
			return fmt.Sprintf("Keeper not gone: finalizers %v, deletionTimestamp %v", k.GetFinalizers(), k.GetDeletionTimestamp())
		}
		if object(t, c, serviceGVK, ns, "del") != nil {
			return "Service not garbage-collected yet"
		}
		return ""
	})
	cm := object(t, c, configMapGVK, ns, "del-kept")
	sameObject(t, cm, uid)
	if why := released(cm); why != "" {
		t.Errorf("retained ConfigMap not released: %s", why)
	}
}

// The deletion tests run the Depot test kind of testdata/lifecycle: a
// ConfigMap and a PersistentVolumeClaim in wave 0, a Deployment of 2 Pods
// in wave 1.

var (
	depotGVK      = schema.GroupVersionKind{Group: "lifecycle.example.com", Version: "v1", Kind: "Depot"}
	replicaSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
)

// startDepot runs an operator (on cfg, nil for the default) on the
// lifecycle templates in a fresh namespace, creates Depot d and waits for
// its 2 Pods to run.
func startDepot(t *testing.T, cfg *rest.Config) (string, client.Client) {
	t.Helper()
	ns := clustertest.Namespace(t)
	startOperator(t, lifecycleTemplates, ns, cfg)
	waitLifecycleCRD(t, "depots")
	mustKubectl(t, "apiVersion: lifecycle.example.com/v1\nkind: Depot\nmetadata: {name: d, namespace: "+ns+"}\nspec: {replicas: 2}\n",
		"apply", "--server-side", "--field-manager=test", "-f", "-")
	c := newClient(t)
	eventually(t, 90*time.Second, func() string {
		if n := len(depotPods(t, c, ns)); n != 2 {
			return fmt.Sprintf("%d Depot Pods, want 2", n)
		}
		return ""
	})
	return ns, c
}

// depotPods are the Pods of Depot d not being deleted.
func depotPods(t *testing.T, c client.Client, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"depot": "d"}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(p unstructured.Unstructured) bool { return p.GetDeletionTimestamp() != nil })
}

// depotGone waits for Depot d to be gone.
func depotGone(t *testing.T, c client.Client, ns string) {
	t.Helper()
	// The garbage collector learns of a new CRD's resource from discovery,
	// every 30 s: the first Depot may wait that long for it.
	eventually(t, 120*time.Second, func() string {
		if d := object(t, c, depotGVK, ns, "d"); d != nil {
			return fmt.Sprintf("Depot not gone: finalizers %v", d.GetFinalizers())
		}
		return ""
	})
}

// TestFinalizersOneWriteEach creates and deletes a Depot, a kind with
// waves and a retained child (its claim): both finalizers go on in one
// write, and come off in one, and the API server refuses no write.
func TestFinalizersOneWriteEach(t *testing.T) {
	cfg, ct := testkit.CountRequests(clustertest.Config())
	ns, c := startDepot(t, cfg)
	d := object(t, c, depotGVK, ns, "d")
	if fins := d.GetFinalizers(); !slices.Equal(fins, reconcile.Finalizers) {
		t.Errorf("finalizers %v, want %v", fins, reconcile.Finalizers)
	}
	crPath := "PATCH /apis/lifecycle.example.com/v1/namespaces/" + ns + "/depots/d"
	crWrites := func() int {
		writes := testkit.Strings(ct.Writes(0))
		return len(slices.DeleteFunc(writes, func(w string) bool { return w != crPath }))
	}
	if n := crWrites(); n != 1 {
		t.Errorf("%d writes of the Depot (not its status) on create, want 1 (both finalizers)", n)
	}
	mustKubectl(t, "", "-n", ns, "delete", "depot", "d", "--wait=false")
	depotGone(t, c, ns)
	if n := crWrites(); n != 2 {
		t.Errorf("%d writes of the Depot (not its status) after its deletion, want 2 (finalizers on, then off)", n)
	}
	if failed := ct.Where(testkit.Request.Refused); len(failed) > 0 {
		t.Errorf("the API server refused %d writes: %v", len(failed), failed)
	}
}

// TestOrderedDeletionWaitsForDependents deletes a Depot: the Deployment
// (wave 1) is deleted in the foreground, so that its ReplicaSet and Pods
// are gone before the ConfigMap (wave 0) is deleted; the claim is released
// (a data kind), not deleted.
func TestOrderedDeletionWaitsForDependents(t *testing.T) {
	ns, c := startDepot(t, nil)
	claim := string(object(t, c, pvcGVK, ns, "d-data").GetUID())
	rec := record(t, ns, podGVK, replicaSetGVK, deploymentGVK, configMapGVK, pvcGVK)
	mustKubectl(t, "", "-n", ns, "delete", "depot", "d", "--wait=false")
	depotGone(t, c, ns)

	deleted := func(kind string) []event {
		return rec.all(func(e event) bool { return e.kind == kind && e.typ == watch.Deleted })
	}
	cm := deleted("ConfigMap")
	if len(cm) != 1 || cm[0].name != "d-config" {
		t.Fatalf("ConfigMaps deleted: %v, want d-config", cm)
	}
	wave1 := append(append(deleted("Pod"), deleted("ReplicaSet")...), deleted("Deployment")...)
	if len(wave1) < 4 {
		t.Fatalf("deleted %d Pods, ReplicaSets and Deployments, want at least 4", len(wave1))
	}
	for _, e := range wave1 {
		if e.rv >= cm[0].rv {
			t.Errorf("%s %s deleted (rv %d) after the wave-0 ConfigMap (rv %d): a wave's dependents must be gone first", e.kind, e.name, e.rv, cm[0].rv)
		}
	}
	if pvc := deleted("PersistentVolumeClaim"); len(pvc) > 0 {
		t.Errorf("the claim was deleted: %v", pvc)
	}
	o := object(t, c, pvcGVK, ns, "d-data")
	sameObject(t, o, claim)
	if why := released(o); why != "" {
		t.Errorf("claim not released: %s", why)
	}
}

// TestOrphanCascadeDeletesNothing deletes a Depot with kubectl's orphan
// cascade: cueop deletes no child, takes its finalizers off, and the
// garbage collector orphans every child.
func TestOrphanCascadeDeletesNothing(t *testing.T) {
	ns, c := startDepot(t, nil)
	uids := map[schema.GroupVersionKind]string{}
	for gvk, name := range map[schema.GroupVersionKind]string{configMapGVK: "d-config", pvcGVK: "d-data", deploymentGVK: "d"} {
		uids[gvk] = string(object(t, c, gvk, ns, name).GetUID())
	}
	pods := depotPods(t, c, ns)
	mustKubectl(t, "", "-n", ns, "delete", "depot", "d", "--cascade=orphan", "--wait=false")
	depotGone(t, c, ns)
	eventually(t, 30*time.Second, func() string {
		d := object(t, c, deploymentGVK, ns, "d")
		if d == nil {
			t.Fatal("the Deployment (wave 1) was deleted")
		}
		if refs := d.GetOwnerReferences(); len(refs) > 0 {
			return fmt.Sprintf("Deployment not orphaned yet: %v", refs)
		}
		return ""
	})
	for gvk, name := range map[schema.GroupVersionKind]string{configMapGVK: "d-config", pvcGVK: "d-data", deploymentGVK: "d"} {
		sameObject(t, object(t, c, gvk, ns, name), uids[gvk])
	}
	var names []string
	for _, p := range depotPods(t, c, ns) {
		names = append(names, string(p.GetUID()))
	}
	for _, p := range pods {
		if !slices.Contains(names, string(p.GetUID())) {
			t.Errorf("Pod %s was deleted", p.GetName())
		}
	}
}

// TestRetainedClaimReleasedWhateverItsLabels deletes a Keeper whose claim
// (retained: a data kind) and retained ConfigMap (onDelete: retain) had
// their cueop labels rewritten by another tool while no operator ran, so
// that no cache of cueop's children holds them: they are found from the
// API server and released, never garbage-collected.
func TestRetainedClaimReleasedWhateverItsLabels(t *testing.T) {
	ns := clustertest.Namespace(t)
	_, stop := startOperatorStoppable(t, lifecycleTemplates, ns, nil)
	waitLifecycleCRD(t, "keepers")
	c := newClient(t)
	applyKeeper(t, ns, "lost", "storageClass: fast", "kept: true")
	uids := map[schema.GroupVersionKind]string{
		pvcGVK:       string(exists(t, c, pvcGVK, ns, "lost-data").GetUID()),
		configMapGVK: string(exists(t, c, configMapGVK, ns, "lost-kept").GetUID()),
	}
	names := map[schema.GroupVersionKind]string{pvcGVK: "lost-data", configMapGVK: "lost-kept"}
	eventually(t, 30*time.Second, func() string {
		if f := object(t, c, keeperGVK, ns, "lost").GetFinalizers(); !slices.Contains(f, wellknown.FinalizerRetain) {
			return fmt.Sprintf("finalizers %v", f)
		}
		return ""
	})
	stop()
	for _, obj := range []string{"pvc/lost-data", "configmap/lost-kept"} {
		mustKubectl(t, "", "-n", ns, "label", obj, "--overwrite", "app.kubernetes.io/managed-by=another-tool", "cueop.dev/owner-uid-", "cueop.dev/id-")
	}
	mustKubectl(t, "", "-n", ns, "delete", "keeper", "lost", "--wait=false")
	startOperator(t, lifecycleTemplates, ns, nil)
	eventually(t, 90*time.Second, func() string {
		if k := object(t, c, keeperGVK, ns, "lost"); k != nil {
			return fmt.Sprintf("Keeper not gone: finalizers %v", k.GetFinalizers())
		}
		return ""
	})
	for gvk, name := range names {
		o := object(t, c, gvk, ns, name)
		sameObject(t, o, uids[gvk])
		if refs := o.GetOwnerReferences(); len(refs) > 0 {
			t.Errorf("%s %s still owned: %v", gvk.Kind, name, refs)
		}
		if from := o.GetAnnotations()[wellknown.AnnotationReleasedFrom]; !strings.HasPrefix(from, "Keeper.lifecycle.example.com "+ns+"/lost") {
			t.Errorf("%s %s not marked released: %v", gvk.Kind, name, o.GetAnnotations())
		}
	}
}

// TestClaimDroppedIsReleasedWithoutAnnotation stops rendering a claim
// whose template gives it no policy, its policy annotations removed (as if
// they never reached it: an apply that failed, a wave held back, a CR that
// skipped the revision that set them): it is released, not deleted.
func TestClaimDroppedIsReleasedWithoutAnnotation(t *testing.T) {
	ns := clustertest.Namespace(t)
	_, stop := startOperatorStoppable(t, lifecycleTemplates, ns, nil)
	waitLifecycleCRD(t, "keepers")
	c := newClient(t)
	applyKeeper(t, ns, "drop", "storageClass: fast")
	uid := string(exists(t, c, pvcGVK, ns, "drop-data").GetUID())
	stop()
	mustKubectl(t, "", "-n", ns, "annotate", "pvc", "drop-data", "cueop.dev/prune-", "cueop.dev/on-delete-")
	patchKeeper(t, ns, "drop", `{"storageClass":""}`)
	startOperator(t, lifecycleTemplates, ns, nil)
	eventually(t, 60*time.Second, func() string { return released(object(t, c, pvcGVK, ns, "drop-data")) })
	sameObject(t, object(t, c, pvcGVK, ns, "drop-data"), uid)
}
