package render_test

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	_ "github.com/cueop/cueop/internal/update"
)

func TestRenderSetsEngineFields(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	res, err := render.Render(k, redis(map[string]any{"replicas": int64(2)}), nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Children {
		ids = append(ids, c.ID)
		o := c.Object
		if o.GetNamespace() != "ns" {
			t.Errorf("%s: namespace %q, want the parent's", c.ID, o.GetNamespace())
		}
		l := o.GetLabels()
		if l[wellknown.LabelID] != c.ID || l[wellknown.LabelOwnerUID] != "uid-1" || l[wellknown.LabelManagedBy] != "cueop" {
			t.Errorf("%s: labels %v lack the management labels", c.ID, l)
		}
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s: owner references %+v, want the controller reference to the parent", c.ID, refs)
		}
	}
	if got := strings.Join(ids, ","); got != "config,pod-0,pod-1,service" {
		t.Errorf("ids = %s, want config,pod-0,pod-1,service (sorted)", got)
	}
	if img := res.Children[1].Object.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; img != "redis:7.0" {
		t.Errorf("image = %v, want the default version", img)
	}
	port := res.Children[1].Object.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"].([]any)[0].(map[string]any)["containerPort"]
	if _, ok := port.(int64); !ok {
		t.Errorf("containerPort is %T, want int64 as in unstructured objects", port)
	}
}

func TestRenderWithoutUIDHasNoOwner(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	p := redis(map[string]any{})
	p.SetUID("")
	res, err := render.Render(k, p, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := res.Children[0].Object.GetOwnerReferences(); len(refs) != 0 {
		t.Errorf("owner references %v without a parent uid", refs)
	}
}

func TestRenderInvalidSpecNamesField(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	_, err := render.Render(k, redis(map[string]any{"replicas": int64(0)}), nil, render.Options{})
	rerr := renderError(t, err, wellknown.ReasonInvalidSpec, "spec.replicas", "out of bound >=1", "rediscluster.cue:")
	if len(rerr.Messages) != 1 {
		t.Errorf("got %d messages, want exactly the one on spec.replicas: %q", len(rerr.Messages), rerr.Messages)
	}
}

func TestRenderRefusesChildren(t *testing.T) {
	for name, tc := range map[string]struct{ children, want string }{
		"other namespace": {`cm: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x", namespace: "kube-system"}}`, `namespace "kube-system" refused`},
		"cluster role":    {`cr: {apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: name: "x"}`, "not in the allowed kinds"},
		"webhook":         {`wh: {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", metadata: name: "x"}`, "not in the allowed kinds"},
		"secret":          {`s: {apiVersion: "v1", kind: "Secret", metadata: name: "x"}`, "kind Secret is not in the allowed kinds"},
		"no name":         {`cm: {apiVersion: "v1", kind: "ConfigMap", metadata: labels: a: "b"}`, "metadata.name is required"},
		"no kind":         {`cm: {apiVersion: "v1", metadata: name: "x"}`, "apiVersion and kind are required"},
		"bad id":          {`"bad id!": {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}`, "child id must be a valid label value"},
		"duplicate":       {`a: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}` + "\n" + `b: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}`, "also rendered by child a"},
		"budget":          {`for i in list.Range(0, parent.spec.n, 1) {"cm-\(i)": {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x-\(i)"}}`, "exceed the render budget of 500"},
	} {
		t.Run(name, func(t *testing.T) {
			k := kindWithChildren(t, tc.children)
			_, err := render.Render(k, app(1000), nil, render.Options{})
			renderError(t, err, wellknown.ReasonChildRefused, tc.want, "app.cue:")
		})
	}
}

func TestRenderClusterScopedAllowedStillRefused(t *testing.T) {
	k := kindWithChildren(t, `cr: {apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: name: "x"}`)
	allowed := render.MustKindSet("ClusterRole.rbac.authorization.k8s.io")
	_, err := render.Render(k, app(1), nil, render.Options{AllowedKinds: allowed})
	if err == nil || !strings.Contains(err.Error(), "cluster-scoped") {
		t.Fatalf("error = %v, want cluster-scoped refusal even when allow-listed", err)
	}
}

func TestRenderTemplateErrorIsPositioned(t *testing.T) {
	k := kindWithChildren(t, `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x", data: {if parent.spec.n > 5 {n: parent.spec.n + "s"}}}`)
	_, err := render.Render(k, app(10), nil, render.Options{})
	renderError(t, err, wellknown.ReasonTemplateError, "app.cue:")
}

func TestDefaultReadyUsesKstatus(t *testing.T) {
	k := kindWithChildren(t, `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}`)
	res, err := render.Render(k, app(1), nil, render.Options{})
	if err != nil || res.Ready {
		t.Fatalf("ready = %v, %v; want false while the child does not exist", res, err)
	}
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}
	res, err = render.Render(k, app(1), map[string]*unstructured.Unstructured{"cm": live}, render.Options{})
	if err != nil || !res.Ready {
		t.Fatalf("ready = %v, %v; want true once the ConfigMap exists", res, err)
	}
}

func TestRenderStatusFromObserved(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	pod := func(ready string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p"},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready}}}}}
	}
	observed := map[string]*unstructured.Unstructured{"pod-0": pod("True"), "pod-1": pod("True"), "pod-2": pod("False"), "pod-7": pod("True")}
	res, err := render.Render(k, redis(map[string]any{}), observed, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status["readyReplicas"] != int64(2) || res.Status["phase"] != "Degraded" || res.Ready {
		t.Errorf("status = %v ready=%v; want 2 ready (pod-7 is not wanted), Degraded, not ready", res.Status, res.Ready)
	}
}

// TestRenderConcurrent renders one compiled kind from several goroutines, as
// a controller with several workers does; run with -race.
func TestRenderConcurrent(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	crs := make([]*unstructured.Unstructured, 6)
	want := make([]*render.Result, len(crs))
	for i := range crs {
		crs[i] = redis(map[string]any{"replicas": int64(i + 1)})
		res, err := render.Render(k, crs[i], readyPods(int64(i)), render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for j := range 3 * len(crs) {
				i := (g + j) % len(crs)
				got, err := render.Render(k, crs[i], readyPods(int64(i)), render.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, want[i]) {
					t.Errorf("render %d differs when concurrent", i)
				}
			}
		})
	}
	wg.Wait()
}

// TestRenderHeapIsFlat renders many distinct CRs and checks that the heap
// they leave behind stays flat: a render must not compile CUE (per-call
// Compile grows a long-lived cue.Context by kilobytes a call).
func TestRenderHeapIsFlat(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	renderN := func(from, n int) {
		for i := from; i < from+n; i++ {
			cr := redis(map[string]any{"replicas": int64(i%3 + 1), "version": fmt.Sprintf("7.%d", i)})
			cr.SetName(fmt.Sprintf("r%d", i))
			if _, err := render.Render(k, cr, readyPods(int64(i%3+1)), render.Options{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	heap := func() int64 {
		runtime.GC() // twice: the first leaves sync.Pool victims behind
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	renderN(0, 100)
	before := heap()
	const n = 500
	renderN(100, n)
	if grown := heap() - before; grown > n*1024 {
		t.Errorf("heap grew by %d bytes over %d renders: about %d bytes a render", grown, n, grown/n)
	}
	runtime.KeepAlive(k) // else the kind itself is collected before the last count
}

// TestWireParent: what a worker is sent of the CR renders as the CR itself
// (its managedFields, status, finalizers and other metadata left out), and
// keeps the immutable values its status records.
func TestWireParent(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	cr := redis(map[string]any{"replicas": int64(3), "version": "7.2"})
	md := cr.Object["metadata"].(map[string]any)
	md["labels"] = map[string]any{"team": "a"}
	md["annotations"] = map[string]any{"note": "x"}
	md["finalizers"] = []any{"cueop.dev/retain"}
	md["resourceVersion"] = "42"
	md["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Apply", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}}
	cr.Object["status"] = map[string]any{"readyReplicas": int64(3), render.StatusImmutable: map[string]any{"spec.version": "7.2"},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	wire := &unstructured.Unstructured{Object: render.WireParent(cr)}
	if _, ok := wire.Object["metadata"].(map[string]any)["managedFields"]; ok {
		t.Fatalf("managedFields sent: %v", wire.Object)
	}
	if got := wire.Object["status"]; !reflect.DeepEqual(got, map[string]any{render.StatusImmutable: map[string]any{"spec.version": "7.2"}}) {
		t.Fatalf("status sent: %v, want the immutable values alone", got)
	}
	want, err := render.Render(k, cr, fullPods(t), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := render.Render(k, wire, fullPods(t), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rendered from the wire parent:\n%+v\nfrom the CR:\n%+v", got, want)
	}
}
