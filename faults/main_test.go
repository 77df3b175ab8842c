package faults_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestMain starts the package's shared control plane: etcd, kube-apiserver,
// kube-controller-manager (its garbage collector deletes the children of a
// deleted CR), kube-scheduler and kwok (fake nodes whose Pods turn Ready).
// Tests that stop or starve the API server start a private one instead.
func TestMain(m *testing.M) {
	clustertest.SetLogger() // client-go's event broadcaster complains while an API server is down
	clustertest.Main(m, localcluster.Options{})
}

var (
	redisGVK  = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1", Kind: "RedisCluster"}
	siteGVK   = schema.GroupVersionKind{Group: "web.example.com", Version: "v1", Kind: "StaticSite"}
	sharedGVK = schema.GroupVersionKind{Group: "faults.example.com", Version: "v1", Kind: "SharedStatus"}
	podGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	svcGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	cmGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// env is one control plane as the tests see it: the shared one of
// clustertest or a private one.
type env struct {
	cfg        *rest.Config
	kubeconfig string
	c          client.Client
}

func sharedEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, clustertest.Config(), clustertest.Cluster().KubeconfigPath)
}

func newEnv(t *testing.T, cfg *rest.Config, kubeconfig string) *env {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{cfg: cfg, kubeconfig: kubeconfig, c: c}
}

// privateCluster starts a control plane of all five components for one
// test, and stops it when the test ends.
func privateCluster(t *testing.T, opts localcluster.Options) (*localcluster.Cluster, *env) {
	t.Helper()
	start := time.Now()
	lc, err := localcluster.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			lc.Keep()
			t.Logf("private control plane logs kept in %s", lc.LogDir)
		}
		if err := lc.Stop(); err != nil {
			t.Errorf("stop private control plane: %v", err)
		}
	})
	t.Logf("private control plane ready in %s", time.Since(start).Round(time.Millisecond))
	return lc, newEnv(t, lc.Config, lc.KubeconfigPath)
}

// kubectl runs the real kubectl against e.
func (e *env) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return clustertest.KubectlAt(e.kubeconfig, stdin, args...)
}

func (e *env) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return clustertest.MustKubectlAt(t, e.kubeconfig, stdin, args...)
}

// waitCRD waits until the CRD of gvk is established.
func (e *env) waitCRD(t *testing.T, gvk schema.GroupVersionKind) {
	t.Helper()
	name := template.CRDName(template.Pluralize(strings.ToLower(gvk.Kind)), gvk.Group)
	eventually(t, 60*time.Second, func() string {
		out, err := e.kubectl(t, "", "get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err != nil || out != "True" {
			return "CRD " + name + " not established: " + out
		}
		return ""
	})
}

// startOperator runs an operator in this process on dir, serving namespace
// ns of e through cfg (nil: e's config), until the test ends, and returns
// what follows its activity.
func startOperator(t *testing.T, e *env, dir, ns string, cfg *rest.Config) *operatortest.Activity {
	t.Helper()
	if cfg == nil {
		cfg = e.cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 0, 0 // the operator's own defaults
	a, _ := operatortest.StartObserved(t, cfg, operatortest.Options(dir, ns))
	return a
}

// The test kit's helpers, by their short names. A copy of the project's
// templates is for adding kinds to: the shipped kinds must not be edited,
// their CRDs are shared by every test of the control plane.
var (
	eventually    = clustertest.Eventually
	within        = clustertest.Within
	copyTemplates = testkit.CopyTemplates
	writeKind     = testkit.WriteKind
)

// redisYAML is a RedisCluster manifest.
func redisYAML(ns, name string, replicas int) string {
	return fmt.Sprintf("apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  replicas: %d\n", name, ns, replicas)
}

// applyRedis applies n RedisClusters of replicas Pods, named prefix-0 ..
// prefix-(n-1), with one kubectl apply: they converge side by side.
func (e *env) applyRedis(t *testing.T, ns, prefix string, n, replicas int) []string {
	t.Helper()
	var b strings.Builder
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		names = append(names, name)
		b.WriteString("---\n" + redisYAML(ns, name, replicas))
	}
	e.mustKubectl(t, b.String(), "apply", "-f", "-")
	return names
}

func (e *env) get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

func (e *env) mustGet(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := e.get(t, gvk, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// list lists the objects of gvk in ns matching labels (nil: all).
func (e *env) list(t *testing.T, gvk schema.GroupVersionKind, ns string, labels map[string]string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(ns)}
	if labels != nil {
		opts = append(opts, client.MatchingLabels(labels))
	}
	if err := e.c.List(context.Background(), list, opts...); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

var (
	condition       = testkit.Condition
	conditionStatus = testkit.ConditionStatus
)

// redisReady says why the RedisCluster is not Ready with want ready
// replicas at its current generation, or "".
func redisReady(cr *unstructured.Unstructured, want int64) string {
	ready, _, _ := unstructured.NestedInt64(cr.Object, "status", "readyReplicas")
	phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase")
	gen, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	if ready != want || phase != "Running" || gen != cr.GetGeneration() ||
		conditionStatus(cr, "Ready") != "True" || conditionStatus(cr, "Stalled") != "False" {
		return fmt.Sprintf("%s: generation %d, status %v", cr.GetName(), cr.GetGeneration(), cr.Object["status"])
	}
	return ""
}

// allRedisReady says which of the RedisClusters of ns named in want (name
// -> replicas) is not Ready yet, or "".
func (e *env) allRedisReady(t *testing.T, ns string, want map[string]int) string {
	t.Helper()
	byName := map[string]*unstructured.Unstructured{}
	for _, cr := range e.list(t, redisGVK, ns, nil) {
		byName[cr.GetName()] = &cr
	}
	notReady := 0
	var first string
	for _, name := range sortedKeys(want) {
		cr, ok := byName[name]
		why := "missing"
		if ok {
			why = redisReady(cr, int64(want[name]))
		}
		if why != "" {
			notReady++
			if first == "" {
				first = name + ": " + why
			}
		}
	}
	if notReady > 0 {
		return fmt.Sprintf("%d of %d RedisClusters not Ready; first: %s", notReady, len(want), first)
	}
	return ""
}

// readyCount is the number of RedisClusters of ns that are Ready.
func (e *env) readyCount(t *testing.T, ns string) int {
	n := 0
	for _, cr := range e.list(t, redisGVK, ns, nil) {
		if conditionStatus(&cr, "Ready") == "True" {
			n++
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// childKinds are the kinds cueop's shipped templates create.
var childKinds = []schema.GroupVersionKind{
	podGVK, svcGVK, cmGVK, {Group: "apps", Version: "v1", Kind: "Deployment"},
}

// parentKinds are the kinds whose CRs may own cueop's children in the
// tests' namespaces.
var parentKinds = []schema.GroupVersionKind{redisGVK, siteGVK, sharedGVK}

// checkChildren says what is wrong with the children of the CRs of kind gvk
// (RedisCluster or a copy of its template) in ns, or "": each CR of want (name -> replicas) has exactly its Pods
// name-0 .. name-(replicas-1), one Service and one ConfigMap, each with
// exactly one owner reference, the controller one to that CR (no
// duplicate); and every object cueop labels as its own in ns has a live
// controller owner whose uid it names (no orphan).
func (e *env) checkChildren(t *testing.T, ns string, gvk schema.GroupVersionKind, want map[string]int) string {
	t.Helper()
	crs := map[string]*unstructured.Unstructured{} // by uid
	byName := map[string]*unstructured.Unstructured{}
	for _, pk := range parentKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(pk.GroupVersion().WithKind(pk.Kind + "List"))
		if err := e.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			if pk == gvk {
				t.Fatal(err)
			}
			continue // a kind this test does not serve
		}
		for _, cr := range list.Items {
			crs[string(cr.GetUID())] = &cr
			if pk == gvk {
				byName[cr.GetName()] = &cr
			}
		}
	}
	var problems []string
	owned := map[string][]string{} // cr uid -> "Kind/name" of live children
	for _, gvk := range childKinds {
		for _, o := range e.list(t, gvk, ns, map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByValue}) {
			what := gvk.Kind + "/" + o.GetName()
			if o.GetDeletionTimestamp() != nil {
				continue // on its way out: the garbage collector or a prune deletes it
			}
			refs := o.GetOwnerReferences()
			if len(refs) != 1 || refs[0].Controller == nil || !*refs[0].Controller {
				problems = append(problems, fmt.Sprintf("%s has owner references %v, want exactly one controller reference", what, refs))
				continue
			}
			uid := string(refs[0].UID)
			cr, ok := crs[uid]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s is an orphan: its owner %s %s (uid %s) does not exist", what, refs[0].Kind, refs[0].Name, uid))
				continue
			}
			if cr.GetName() != refs[0].Name || o.GetLabels()[wellknown.LabelOwnerUID] != uid {
				problems = append(problems, fmt.Sprintf("%s: owner reference %s/%s, label %s=%s, want the owner %s", what, refs[0].Name, uid, wellknown.LabelOwnerUID, o.GetLabels()[wellknown.LabelOwnerUID], cr.GetName()))
			}
			owned[uid] = append(owned[uid], what)
		}
	}
	for _, name := range sortedKeys(want) {
		cr, ok := byName[name]
		if !ok {
			problems = append(problems, gvk.Kind+" "+name+" missing")
			continue
		}
		var exp []string
		for i := range want[name] {
			exp = append(exp, fmt.Sprintf("Pod/%s-%d", name, i))
		}
		exp = append(exp, "Service/"+name, "ConfigMap/"+name+"-config")
		got := owned[string(cr.GetUID())]
		sort.Strings(exp)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(exp, ",") {
			problems = append(problems, fmt.Sprintf("%s %s owns %v, want exactly %v", gvk.Kind, name, got, exp))
		}
	}
	if len(problems) > 0 {
		return fmt.Sprintf("%d problems: %s", len(problems), strings.Join(problems[:min(len(problems), 5)], "; "))
	}
	return ""
}

// podUIDs maps each live Pod of ns cueop manages to its uid.
func (e *env) podUIDs(t *testing.T, ns string) map[string]string {
	t.Helper()
	uids := map[string]string{}
	for _, p := range e.list(t, podGVK, ns, map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByValue}) {
		if p.GetDeletionTimestamp() == nil {
			uids[p.GetName()] = string(p.GetUID())
		}
	}
	return uids
}

func uniform(names []string, replicas int) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n] = replicas
	}
	return m
}
