package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

var (
	webAppGVK     = schema.GroupVersionKind{Group: "apps.example.com", Version: "v1", Kind: "WebApp"}
	jobGVK        = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	pdbGVK        = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	secretGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// event is one watch event, with the resourceVersion it carries: one etcd
// orders the writes of every resource, so the versions of events of
// different kinds tell which write came first.
type event struct {
	kind, name string
	typ        watch.EventType
	rv         uint64
	obj        *unstructured.Unstructured
}

// recorder records the watch events of some kinds in a namespace.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func record(t *testing.T, ns string, gvks ...schema.GroupVersionKind) *recorder {
	t.Helper()
	c, err := client.NewWithWatch(clustertest.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &recorder{}
	for _, gvk := range gvks {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		w, err := c.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		go func() {
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
				r.mu.Lock()
				r.events = append(r.events, event{kind: gvk.Kind, name: o.GetName(), typ: ev.Type, rv: rv, obj: o})
				r.mu.Unlock()
			}
		}()
	}
	return r
}

// first is the first event that matches, or nil.
func (r *recorder) first(match func(event) bool) *event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.events {
		if match(r.events[i]) {
			return &r.events[i]
		}
	}
	return nil
}

func (r *recorder) all(match func(event) bool) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

func jobComplete(o *unstructured.Unstructured) bool {
	return testkit.ConditionStatus(o, "Complete") == "True"
}

// TestWebAppReferencesWavesOrderedDeletion runs the WebApp example with a
// referenced Secret (readable because the administrator says so): the
// WebApp waits for the missing Secret, wakes when it appears, its Job
// completes before the Deployment exists, editing the Secret rolls the
// Pods, and deleting the WebApp deletes wave 1 before wave 0.
func TestWebAppReferencesWavesOrderedDeletion(t *testing.T) {
	ns := clustertest.Namespace(t)
	opts := operatortest.Options("../../templates", ns)
	opts.ReadableKinds = render.MustKindSet("ConfigMap,Secret")
	operatortest.StartObserved(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 30*time.Second, "webapps.apps.example.com")
	c := newClient(t)
	rec := record(t, ns, jobGVK, configMapGVK, deploymentGVK, serviceGVK, pdbGVK, webAppGVK)

	mustKubectl(t, fmt.Sprintf(`apiVersion: apps.example.com/v1
kind: WebApp
metadata: {name: shop, namespace: %s}
spec:
  replicas: 2
  settingsFrom: {kind: Secret, name: shop-settings}
`, ns), "apply", "--server-side", "--field-manager=test", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		return conditionIs(object(t, c, webAppGVK, ns, "shop"), "Ready", "False", wellknown.ReasonReferenceNotFound, "references.settings: Secret shop-settings not found")
	})
	if j := object(t, c, jobGVK, ns, "shop-migrate"); j != nil {
		t.Fatal("the Job exists while the referenced Secret is missing")
	}

	// The Secret appears: its watch event wakes the WebApp (there is no
	// resync), and the migration Job is created.
	created := time.Now()
	mustKubectl(t, secretYAML(ns, "info"), "apply", "-f", "-")
	exists(t, c, jobGVK, ns, "shop-migrate")
	t.Logf("Job created %v after the Secret", time.Since(created).Round(time.Millisecond))

	eventually(t, 60*time.Second, func() string {
		return conditionIs(object(t, c, webAppGVK, ns, "shop"), "Ready", "True", "Ready", "")
	})
	complete := rec.first(func(e event) bool { return e.kind == "Job" && jobComplete(e.obj) })
	added := rec.first(func(e event) bool { return e.kind == "Deployment" && e.typ == watch.Added })
	if complete == nil || added == nil || complete.rv >= added.rv {
		t.Fatalf("the Job must complete (%v) before the Deployment is created (%v)", complete, added)
	}
	waiting := rec.first(func(e event) bool {
		cond := conditionOf(e.obj, "Reconciling")
		return e.kind == "WebApp" && cond != nil && cond["reason"] == wellknown.ReasonWaitingForWave &&
			strings.Contains(fmt.Sprint(cond["message"]), "wave 1 waits for children.migrate: Job "+ns+"/shop-migrate")
	})
	if waiting == nil {
		t.Error("the WebApp never said that wave 1 waits for the migration Job")
	}
	if fins := object(t, c, webAppGVK, ns, "shop").GetFinalizers(); !slices.Contains(fins, wellknown.FinalizerOrdered) {
		t.Errorf("finalizers %v, want %s", fins, wellknown.FinalizerOrdered)
	}

	// Editing the Secret rolls the Pods: a new checksum in the Pod template.
	before := checksum(t, object(t, c, deploymentGVK, ns, "shop"))
	edited := time.Now()
	mustKubectl(t, secretYAML(ns, "debug"), "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		if sum := checksum(t, object(t, c, deploymentGVK, ns, "shop")); sum == before {
			return "the Deployment's Pod template still has checksum " + sum
		}
		return ""
	})
	t.Logf("Deployment updated %v after the Secret edit", time.Since(edited).Round(time.Millisecond))
	after := checksum(t, object(t, c, deploymentGVK, ns, "shop"))
	eventually(t, 60*time.Second, func() string {
		pods := &unstructured.UnstructuredList{}
		pods.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
		if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "shop"}); err != nil {
			return err.Error()
		}
		n := 0
		for _, p := range pods.Items {
			if p.GetAnnotations()["apps.example.com/settings-checksum"] == after && p.GetDeletionTimestamp() == nil {
				n++
			}
		}
		if n < 2 {
			return fmt.Sprintf("%d Pods with the new checksum, want 2", n)
		}
		return ""
	})

	// Deleting the WebApp deletes wave 1 (Deployment, Service, PDB), and
	// only once they are gone wave 0 (the Job, the ConfigMap); then the
	// WebApp goes.
	mustKubectl(t, "", "-n", ns, "delete", "webapp", "shop", "--wait=false")
	eventually(t, 60*time.Second, func() string {
		if object(t, c, webAppGVK, ns, "shop") != nil {
			return "the WebApp still exists"
		}
		return ""
	})
	deleting := rec.first(func(e event) bool {
		cond := conditionOf(e.obj, "Reconciling")
		return e.kind == "WebApp" && cond != nil && cond["reason"] == wellknown.ReasonDeleting &&
			strings.HasPrefix(fmt.Sprint(cond["message"]), "deleting wave 1: waiting for ")
	})
	if deleting == nil {
		t.Error("the WebApp never said that it was deleting wave 1")
	}
	inWave1 := map[string]bool{"Deployment": true, "Service": true, "PodDisruptionBudget": true}
	wave0 := rec.all(func(e event) bool {
		return e.typ == watch.Deleted && (e.kind == "Job" || e.kind == "ConfigMap" && e.name == "shop-config")
	})
	wave1 := rec.all(func(e event) bool { return inWave1[e.kind] && e.typ == watch.Deleted })
	if len(wave0) != 2 || len(wave1) != 3 {
		t.Fatalf("deleted: wave 0 %d objects, wave 1 %d, want 2 and 3", len(wave0), len(wave1))
	}
	for _, e := range wave1 {
		for _, w0 := range wave0 {
			if e.rv >= w0.rv {
				t.Errorf("%s %s deleted (rv %d) after %s %s (rv %d): wave 1 must go before wave 0", e.kind, e.name, e.rv, w0.kind, w0.name, w0.rv)
			}
		}
	}
	jobDeleting := rec.first(func(e event) bool { return e.kind == "Job" && e.obj.GetDeletionTimestamp() != nil })
	for _, e := range wave1 {
		if jobDeleting != nil && e.rv >= jobDeleting.rv {
			t.Errorf("the Job was being deleted (rv %d) before %s %s was gone (rv %d)", jobDeleting.rv, e.kind, e.name, e.rv)
		}
	}
}

func secretYAML(ns, level string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-settings, namespace: %s}\nstringData: {LOG_LEVEL: %s}\n", ns, level)
}

func checksum(t *testing.T, d *unstructured.Unstructured) string {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment")
	}
	sum, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "apps.example.com/settings-checksum")
	return sum
}

// conditionIs says how cr's condition typ differs from the status, reason
// and message part given, or "".
func conditionIs(cr *unstructured.Unstructured, typ, status, reason, part string) string {
	if cr == nil {
		return "no CR"
	}
	cond := conditionOf(cr, typ)
	if cond == nil || cond["status"] != status || cond["reason"] != reason || !strings.Contains(fmt.Sprint(cond["message"]), part) {
		return fmt.Sprintf("%s = %v, want %s %s %q", typ, cond, status, reason, part)
	}
	return ""
}

func applyWebApp(t *testing.T, ns, name, kind string) {
	t.Helper()
	mustKubectl(t, fmt.Sprintf("apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: %s, namespace: %s}\nspec:\n  settingsFrom: {kind: %s, name: settings}\n",
		name, ns, kind), "apply", "--server-side", "--field-manager=test", "-f", "-")
}

func waitWebAppCRD(t *testing.T) {
	t.Helper()
	clustertest.WaitEstablished(t, 30*time.Second, "webapps.apps.example.com")
}

// TestReferenceOutsideReadableKindsStalls references a Secret where the
// administrator left Secrets out of the readable kinds (the default): the
// WebApp stalls naming the reference, and nothing is created.
func TestReferenceOutsideReadableKindsStalls(t *testing.T) {
	ns := clustertest.Namespace(t)
	startOperator(t, "../../templates", ns, nil)
	waitWebAppCRD(t)
	c := newClient(t)
	mustKubectl(t, secretYAML(ns, "info"), "apply", "-f", "-")
	applyWebApp(t, ns, "leaky", "Secret")
	eventually(t, 30*time.Second, func() string {
		return conditionIs(object(t, c, webAppGVK, ns, "leaky"), "Stalled", "True", wellknown.ReasonReferenceRefused,
			"references.settings: kind Secret is not in the readable kinds (ConfigMap)")
	})
	if j := object(t, c, jobGVK, ns, "leaky-migrate"); j != nil {
		t.Error("a WebApp whose reference is refused created its Job")
	}
}

// TestOrderedDeletionWaitsForOperatorAndTemplate deletes a WebApp while no
// operator runs: it waits, with every child in place, and the next
// operator deletes its children in wave order and releases it. A WebApp
// whose template directory is removed loses the finalizer, so that its
// deletion is not stuck.
func TestOrderedDeletionWaitsForOperatorAndTemplate(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	c := newClient(t)
	_, stop := startOperatorStoppable(t, dir, ns, nil)
	waitWebAppCRD(t)
	mustKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: %s}\ndata: {LOG_LEVEL: info}\n", ns), "apply", "-f", "-")
	applyWebApp(t, ns, "shop", "ConfigMap")
	exists(t, c, deploymentGVK, ns, "shop")
	stop()

	mustKubectl(t, "", "-n", ns, "delete", "webapp", "shop", "--wait=false")
	cr := object(t, c, webAppGVK, ns, "shop")
	if cr == nil || cr.GetDeletionTimestamp() == nil || !slices.Contains(cr.GetFinalizers(), wellknown.FinalizerOrdered) {
		t.Fatalf("with no operator the deleted WebApp must wait on its finalizer: %v", cr)
	}
	rec := record(t, ns, jobGVK, deploymentGVK)
	startOperator(t, dir, ns, nil)
	eventually(t, 60*time.Second, func() string {
		if object(t, c, webAppGVK, ns, "shop") != nil {
			return "the WebApp still exists"
		}
		return ""
	})
	job := rec.first(func(e event) bool { return e.kind == "Job" && e.typ == watch.Deleted })
	dep := rec.first(func(e event) bool { return e.kind == "Deployment" && e.typ == watch.Deleted })
	if job == nil || dep == nil || dep.rv >= job.rv {
		t.Fatalf("deleted Deployment %v and Job %v: want the Deployment first", dep, job)
	}

	applyWebApp(t, ns, "kept", "ConfigMap")
	eventually(t, 30*time.Second, func() string {
		if cr := object(t, c, webAppGVK, ns, "kept"); cr == nil || !slices.Contains(cr.GetFinalizers(), wellknown.FinalizerOrdered) {
			return "no ordered-deletion finalizer yet"
		}
		return ""
	})
	testkit.Remove(t, dir, "webapp")
	eventually(t, 30*time.Second, func() string {
		cr := object(t, c, webAppGVK, ns, "kept")
		if cr == nil {
			return "the WebApp is gone"
		}
		if slices.Contains(cr.GetFinalizers(), wellknown.FinalizerOrdered) {
			return fmt.Sprintf("finalizers %v, want none once the template is removed", cr.GetFinalizers())
		}
		return ""
	})
}

// TestSelectorReferenceFollowsLabels references the ConfigMaps a label
// selects: labelling one in, or out, re-renders the CR through the
// reference index (an object that stops matching counts too).
func TestSelectorReferenceFollowsLabels(t *testing.T) {
	ns := clustertest.Namespace(t)
	names := startDigest(t, ns)
	names("")
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: "+ns+", labels: {digest: d}}\n", "apply", "-f", "-")
	names("a")
	mustKubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: "+ns+", labels: {digest: d}}\n", "apply", "-f", "-")
	names("a,b")
	mustKubectl(t, "", "-n", ns, "label", "configmap", "a", "digest-")
	names("b")
}

// startDigest runs an operator serving ns with the Digest kind only, creates
// the Digest d, and returns what waits until d's child lists the names want
// (the ConfigMaps labelled digest: d, comma separated).
func startDigest(t *testing.T, ns string) (names func(want string)) {
	t.Helper()
	dir := testkit.Templates(t, map[string]string{"digest/digest.cue": testkit.DigestKind})
	startOperator(t, dir, ns, nil)
	clustertest.WaitEstablished(t, 30*time.Second, "digests.compose.test.example")
	c := newClient(t)
	mustKubectl(t, "apiVersion: compose.test.example/v1\nkind: Digest\nmetadata: {name: d, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	return func(want string) {
		t.Helper()
		start := time.Now()
		eventually(t, 60*time.Second, func() string {
			o := object(t, c, configMapGVK, ns, "d-digest")
			if o == nil {
				return "no d-digest"
			}
			if got, _, _ := unstructured.NestedString(o.Object, "data", "names"); got != want {
				return fmt.Sprintf("names %q, want %q", got, want)
			}
			return ""
		})
		t.Logf("names %q %v after the change", want, time.Since(start).Round(time.Millisecond))
	}
}

// TestClusterScopedKindCannotBeReadable gives the operator a readable kind
// that is cluster-scoped: it refuses to start, saying why.
func TestClusterScopedKindCannotBeReadable(t *testing.T) {
	opts := operatortest.Options("../../templates", "default")
	opts.ReadableKinds = render.MustKindSet("ConfigMap,Namespace")
	_, err := operator.New(clustertest.Config(), opts)
	if err == nil || !strings.Contains(err.Error(), "readable kinds: Namespace is cluster-scoped") {
		t.Fatalf("New: %v; want the cluster-scoped readable kind refused", err)
	}
}
