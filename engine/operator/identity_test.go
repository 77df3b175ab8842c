package operator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// startKinds runs an operator on dir in ns that may also create the kinds
// in extra (comma-separated, as the flag), until stop or the test's end.
func startKinds(t *testing.T, dir, ns, extra string, cfg *rest.Config) (stop func()) {
	t.Helper()
	opts := operatortest.Options(dir, ns)
	allowed := render.DefaultAllowedKinds
	if extra != "" {
		allowed = extra + "," + allowed
	}
	opts.AllowedKinds = render.MustKindSet(allowed)
	if cfg == nil {
		cfg = clustertest.Config()
	}
	return operatortest.Start(t, cfg, opts)
}

func getObj(t *testing.T, c client.Client, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return clustertest.Get(t, c, schema.FromAPIVersionAndKind(apiVersion, kind), ns, name)
}

// crConverged says why the CR is not Ready at its generation, or "".
func crConverged(t *testing.T, c client.Client, apiVersion, kind, ns, name string) string {
	cr := getObj(t, c, apiVersion, kind, ns, name)
	gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	if gen != cr.GetGeneration() || conditionStatus(cr, "Ready") != "True" || conditionStatus(cr, "Reconciling") != "False" {
		return fmt.Sprintf("%s %s status = %v", kind, name, cr.Object["status"])
	}
	return ""
}

// touch makes the operator reconcile the CR (an annotation changes nothing
// it renders) and waits until a reconcile found a child in sync.
func touch(t *testing.T, ref, ns string, i int) {
	t.Helper()
	before := inSync(t)
	mustKubectl(t, "", "-n", ns, "annotate", "--overwrite", ref, "test.cueop.dev/touch="+strconv.Itoa(i))
	eventually(t, 30*time.Second, func() string {
		if inSync(t) == before {
			return "no reconcile found the children in sync after touching " + ref
		}
		return ""
	})
}

// scalerTemplate renders an autoscaling/v1 HorizontalPodAutoscaler, a
// served version that is not the API server's preferred one (v2), and
// reads back a field only v1 has.
const scalerTemplate = `package scaler

resource: {group: "idtest.example.com", version: "v1", kind: "Scaler"}

#Spec: {max: *3 | int & >=1}
#Status: {target: int}

` + testkit.ParentObserved + `
children: hpa: {
	apiVersion: "autoscaling/v1"
	kind:       "HorizontalPodAutoscaler"
	metadata: name: parent.metadata.name
	spec: {
		scaleTargetRef: {apiVersion: "apps/v1", kind: "Deployment", name: parent.metadata.name}
		minReplicas:                    1
		maxReplicas:                    parent.spec.max
		targetCPUUtilizationPercentage: 50
	}
}
status: {
	if observed.hpa.spec.targetCPUUtilizationPercentage != _|_ {target: observed.hpa.spec.targetCPUUtilizationPercentage}
	if observed.hpa.spec.targetCPUUtilizationPercentage == _|_ {target: 0}
}
ready: status.target == 50
`

// TestNonPreferredVersionChild: a template renders an autoscaling/v1
// HorizontalPodAutoscaler (v2 is preferred). The child is the same object
// at any version: it is created once, the template reads it at v1, and
// neither further reconciles nor a fresh operator write anything.
func TestNonPreferredVersionChild(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"scaler": scalerTemplate})
	cfg, ct := testkit.CountRequests(clustertest.Config())
	stop := startKinds(t, dir, ns, "", cfg)
	clustertest.WaitEstablished(t, 60*time.Second, "scalers.idtest.example.com")
	c := newClient(t)
	mustKubectl(t, "apiVersion: idtest.example.com/v1\nkind: Scaler\nmetadata: {name: s, namespace: "+ns+"}\nspec: {max: 4}\n", "apply", "-f", "-")
	start := time.Now()
	eventually(t, 60*time.Second, func() string {
		if why := crConverged(t, c, "idtest.example.com/v1", "Scaler", ns, "s"); why != "" {
			w := testkit.Strings(ct.Writes(0))
			return fmt.Sprintf("%s; %d HPA writes so far", why, countPath(w, "horizontalpodautoscalers"))
		}
		return ""
	})
	w := testkit.Strings(ct.Writes(0))
	t.Logf("converged in %s with %d HPA writes", time.Since(start).Round(time.Millisecond), countPath(w, "horizontalpodautoscalers"))
	uid := getObj(t, c, "autoscaling/v2", "HorizontalPodAutoscaler", ns, "s").GetUID()
	touch(t, "scaler/s", ns, 0)
	n := len(w)
	for i := 1; i <= 3; i++ {
		touch(t, "scaler/s", ns, i)
	}
	if got := testkit.Strings(ct.Writes(n)); len(got) != 0 {
		t.Fatalf("%d writes by reconciles of a converged Scaler: %v", len(got), got)
	}

	stop()
	cfg, ct = testkit.CountRequests(clustertest.Config())
	before := inSync(t)
	startKinds(t, dir, ns, "", cfg)
	eventually(t, 30*time.Second, func() string {
		if inSync(t) == before {
			return "the fresh operator has not found the HPA in sync"
		}
		return ""
	})
	touch(t, "scaler/s", ns, 4)
	if got := testkit.Strings(ct.Writes(0)); len(got) != 0 {
		t.Fatalf("%d writes by a fresh operator over a converged Scaler: %v", len(got), got)
	}
	if now := getObj(t, c, "autoscaling/v2", "HorizontalPodAutoscaler", ns, "s").GetUID(); now != uid {
		t.Fatalf("the HPA was recreated (uid %s -> %s)", uid, now)
	}
	if why := crConverged(t, c, "idtest.example.com/v1", "Scaler", ns, "s"); why != "" {
		t.Fatal(why)
	}
}

func countPath(writes []string, resource string) int {
	n := 0
	for _, w := range writes {
		if strings.Contains(w, "/"+resource) {
			n++
		}
	}
	return n
}

// sprocketCRD serves v1; sprocketCRDv2 adds v2 (same schema), which becomes
// the preferred version.
var sprocketCRD = testCRD("sprocket.idtest.example.com", "Sprocket", sizeSpec)

var sprocketCRDv2 = testCRD("sprocket.idtest.example.com", "Sprocket", sizeSpec, "v2")

const sizeSpec = "{type: object, properties: {size: {type: integer}}}"

var cogTemplate = sizedChildTemplate("cog", "idtest.example.com", "Cog", "sprocket.idtest.example.com/v1", "Sprocket", "sprocket")

// TestCRDChildGainsPreferredVersion: the CRD of a child gains a new
// preferred version while the operator runs. The template still renders
// v1: neither the running operator nor a fresh one writes anything.
func TestCRDChildGainsPreferredVersion(t *testing.T) {
	ns := clustertest.Namespace(t)
	installCRD(t, sprocketCRD, "sprockets.sprocket.idtest.example.com")
	dir := kindsDir(t, map[string]string{"cog": cogTemplate})
	const allowed = "Sprocket.sprocket.idtest.example.com"
	cfg, ct := testkit.CountRequests(clustertest.Config())
	stop := startKinds(t, dir, ns, allowed, cfg)
	clustertest.WaitEstablished(t, 60*time.Second, "cogs.idtest.example.com")
	c := newClient(t)
	mustKubectl(t, "apiVersion: idtest.example.com/v1\nkind: Cog\nmetadata: {name: g, namespace: "+ns+"}\nspec: {size: 2}\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return crConverged(t, c, "idtest.example.com/v1", "Cog", ns, "g") })
	uid := getObj(t, c, "sprocket.idtest.example.com/v1", "Sprocket", ns, "g").GetUID()

	mustKubectl(t, sprocketCRDv2, "apply", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		out, _ := kubectl(t, "", "get", "--raw", "/apis/sprocket.idtest.example.com")
		if !strings.Contains(out, `"preferredVersion":{"groupVersion":"sprocket.idtest.example.com/v2"`) {
			return "v2 not preferred yet: " + out
		}
		return ""
	})
	touch(t, "cog/g", ns, 0)
	w := testkit.Strings(ct.Writes(0))
	for i := 1; i <= 3; i++ {
		touch(t, "cog/g", ns, i)
	}
	if got := testkit.Strings(ct.Writes(len(w))); len(got) != 0 {
		t.Fatalf("%d writes by reconciles of a converged Cog: %v", len(got), got)
	}

	stop()
	cfg, ct = testkit.CountRequests(clustertest.Config())
	before := inSync(t)
	startKinds(t, dir, ns, allowed, cfg)
	eventually(t, 30*time.Second, func() string {
		if inSync(t) == before {
			w := testkit.Strings(ct.Writes(0))
			return fmt.Sprintf("the fresh operator has not found the Sprocket in sync; writes: %v", w)
		}
		return ""
	})
	touch(t, "cog/g", ns, 4)
	if got := testkit.Strings(ct.Writes(0)); len(got) != 0 {
		t.Fatalf("%d writes by a fresh operator over a converged Cog: %v", len(got), got)
	}
	if now := getObj(t, c, "sprocket.idtest.example.com/v2", "Sprocket", ns, "g").GetUID(); now != uid {
		t.Fatalf("the Sprocket was recreated (uid %s -> %s)", uid, now)
	}
}

// memoTemplate names its ConfigMap after a hash of its content, as config
// rollouts do: every edit renames the child.
const memoTemplate = `package memo

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

resource: {group: "idtest.example.com", version: "v1", kind: "Memo"}

#Spec: {text: *"" | string}
#Status: {name: string, text: string}

` + testkit.ParentObserved + `
children: config: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: "\(parent.metadata.name)-\(strings.SliceRunes(hex.Encode(sha256.Sum256(parent.spec.text)), 0, 10))"
	data: text: parent.spec.text
}
status: {
	if observed.config != _|_ {name: observed.config.metadata.name, text: observed.config.data.text}
	if observed.config == _|_ {name: "", text: ""}
}
ready: status.text == parent.spec.text
`

func memoName(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "m-" + hex.EncodeToString(sum[:])[:10]
}

// cmEvent is one ConfigMap event seen by the test's watch.
type cmEvent struct {
	typ  watch.EventType
	name string
	rv   int64
}

// TestRenamedChildNeverDeletedWhileWanted edits a Memo, whose ConfigMap is
// named after a hash of its text, ten times in quick succession, and
// records every ConfigMap create and delete with a watch. The first
// ConfigMap holds a finalizer until the end, so that every reconcile finds
// two or more objects with the child's id in the cache. Each wanted
// ConfigMap is created at most once and deleted only after an edit stopped
// wanting it; at the end exactly the last one is left. resourceVersions are
// compared as numbers: with one etcd they are its global revision, so an
// edit and a delete are ordered by them.
func TestRenamedChildNeverDeletedWhileWanted(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"memo": memoTemplate})
	startKinds(t, dir, ns, "", nil)
	clustertest.WaitEstablished(t, 60*time.Second, "memos.idtest.example.com")
	c := newClient(t)
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	must(t, err)
	defer w.Stop()
	var mu sync.Mutex
	var events []cmEvent
	go func() {
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(metav1.Object)
			if !ok || !strings.HasPrefix(o.GetName(), "m-") {
				continue
			}
			rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
			mu.Lock()
			events = append(events, cmEvent{ev.Type, o.GetName(), rv})
			mu.Unlock()
		}
	}()

	mustKubectl(t, "apiVersion: idtest.example.com/v1\nkind: Memo\nmetadata: {name: m, namespace: "+ns+"}\nspec: {text: edit-0}\n", "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return crConverged(t, c, "idtest.example.com/v1", "Memo", ns, "m") })
	first := memoName("edit-0")
	release := func() (string, error) {
		return kubectl(t, "", "-n", ns, "patch", "configmap", first, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
	t.Cleanup(func() { _, _ = release() })
	mustKubectl(t, "", "-n", ns, "patch", "configmap", first, "--type=merge", "-p", `{"metadata":{"finalizers":["test.cueop.dev/hold"]}}`)

	// supersededAt[name] is the resourceVersion of the edit that stopped
	// wanting name.
	supersededAt := map[string]int64{}
	const edits = 10
	for i := 1; i <= edits; i++ {
		cr := &unstructured.Unstructured{}
		cr.SetAPIVersion("idtest.example.com/v1")
		cr.SetKind("Memo")
		cr.SetNamespace(ns)
		cr.SetName("m")
		patch := fmt.Sprintf(`{"spec":{"text":"edit-%d"}}`, i)
		must(t, c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, []byte(patch))))
		rv, _ := strconv.ParseInt(cr.GetResourceVersion(), 10, 64)
		supersededAt[memoName(fmt.Sprintf("edit-%d", i-1))] = rv
	}
	final := memoName(fmt.Sprintf("edit-%d", edits))
	eventually(t, 60*time.Second, func() string {
		cr := getObj(t, c, "idtest.example.com/v1", "Memo", ns, "m")
		gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
		text, _, _ := unstructured.NestedString(cr.Object, "status", "text")
		if gen != cr.GetGeneration() || text != fmt.Sprintf("edit-%d", edits) || conditionStatus(cr, "Ready") != "True" {
			return fmt.Sprintf("Memo status = %v", cr.Object["status"])
		}
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "m-") && cm.DeletionTimestamp == nil {
				names = append(names, cm.Name)
			}
		}
		if len(names) != 1 || names[0] != final {
			return fmt.Sprintf("ConfigMaps %v, want only %s", names, final)
		}
		return ""
	})
	if out, err := release(); err != nil {
		t.Fatalf("release %s: %v: %s", first, err, out)
	}
	eventually(t, 30*time.Second, func() string {
		mu.Lock()
		defer mu.Unlock()
		if live := liveNames(events); len(live) != 1 || !live[final] {
			return fmt.Sprintf("the watch has not seen the end yet: %v", live)
		}
		return crConverged(t, c, "idtest.example.com/v1", "Memo", ns, "m")
	})

	mu.Lock()
	defer mu.Unlock()
	created := map[string]int{}
	for _, ev := range events {
		switch ev.typ {
		case watch.Added:
			created[ev.name]++
			if created[ev.name] > 1 {
				t.Errorf("%s created again at %d: it was deleted while wanted", ev.name, ev.rv)
			}
		case watch.Deleted:
			at, ok := supersededAt[ev.name]
			if !ok {
				t.Errorf("%s deleted at %d, but no edit stopped wanting it", ev.name, ev.rv)
			} else if ev.rv < at {
				t.Errorf("%s deleted at %d, before the edit that stopped wanting it (%d)", ev.name, ev.rv, at)
			}
		}
	}
	t.Logf("%d edits: %d ConfigMaps created, %d events", edits, len(created), len(events))
}

// liveNames are the names created and not deleted in events.
func liveNames(events []cmEvent) map[string]bool {
	live := map[string]bool{}
	for _, ev := range events {
		switch ev.typ {
		case watch.Added:
			live[ev.name] = true
		case watch.Deleted:
			delete(live, ev.name)
		}
	}
	return live
}
