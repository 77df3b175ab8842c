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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/wellknown"
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
