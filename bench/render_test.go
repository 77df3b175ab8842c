package bench_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/bench/baseline"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/wellknown"
)

const templates = "../templates"

func loadKind(t testing.TB) *template.Kind {
	t.Helper()
	set := templatetest.Load(t, templates)
	k := set.Lookup("cache.example.com", "RedisCluster")
	if k == nil {
		t.Fatal("no RedisCluster kind in " + templates)
	}
	return k
}

// crs returns the same RedisCluster for both operators.
func crs(replicas int64, version string) (*unstructured.Unstructured, *baseline.RedisCluster) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(2)},
		"spec":     map[string]any{"replicas": replicas, "version": version},
	}}
	rc := &baseline.RedisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: types.UID("uid-1"), Generation: 2},
		Spec:       baseline.RedisClusterSpec{Replicas: int32(replicas), Version: version},
	}
	return u, rc
}

// comparable is what both operators must agree on: identity, spec/data,
// the template's labels and the owner references. Management labels differ
// by design (see package baseline).
func comparable(t *testing.T, obj any) (key string, fields map[string]any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	for _, l := range []string{wellknown.LabelManagedBy, wellknown.LabelID, wellknown.LabelOwnerUID} {
		delete(labels, l)
	}
	fields = map[string]any{
		"namespace": md["namespace"], "labels": labels, "ownerReferences": md["ownerReferences"],
		"spec": m["spec"], "data": m["data"],
	}
	return fmt.Sprintf("%s %s %s", m["apiVersion"], m["kind"], md["name"]), fields
}

// TestSameObjects checks that cueop's render of templates/rediscluster and
// the baseline's builder produce the same objects for the same CR.
func TestSameObjects(t *testing.T) {
	k := loadKind(t)
	conf, err := os.ReadFile(templates + "/rediscluster/redis.conf")
	if err != nil {
		t.Fatal(err)
	}
	if string(conf) != baseline.RedisConf {
		t.Fatalf("baseline.RedisConf differs from templates/rediscluster/redis.conf:\n%s", conf)
	}
	for _, replicas := range []int64{1, 3, 30} {
		u, rc := crs(replicas, "7.2")
		res, err := render.Render(k, u, nil, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cueop := map[string]map[string]any{}
		for _, c := range res.Children {
			key, f := comparable(t, c.Object.Object)
			cueop[key] = f
		}
		want := baseline.Desired(rc)
		hand := map[string]map[string]any{}
		for _, o := range append([]any{want.ConfigMap, want.Service}, anySlice(want.Pods)...) {
			key, f := comparable(t, o)
			hand[key] = f
		}
		if len(cueop) != len(hand) || len(cueop) != int(replicas)+2 {
			t.Fatalf("replicas=%d: cueop renders %d objects, the baseline %d", replicas, len(cueop), len(hand))
		}
		for key, f := range cueop {
			if !reflect.DeepEqual(f, hand[key]) {
				t.Errorf("replicas=%d: %s differs:\ncueop:    %v\nbaseline: %v", replicas, key, f, hand[key])
			}
		}
	}
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

// TestSameStatus checks that both compute the same status from the same
// observed Pods.
func TestSameStatus(t *testing.T) {
	k := loadKind(t)
	for ready := range int64(4) {
		u, rc := crs(3, "7.0")
		res, err := render.Render(k, u, unstructuredPods(3, ready), render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := baseline.ComputeStatus(rc, typedPods(3, ready))
		got := map[string]any{"readyReplicas": int64(st.ReadyReplicas), "phase": st.Phase, "selector": st.Selector}
		if !reflect.DeepEqual(got, res.Status) {
			t.Errorf("%d ready: baseline status %v, cueop %v", ready, got, res.Status)
		}
		if baselineReady := st.Conditions[0].Status == metav1.ConditionTrue; baselineReady != res.Ready {
			t.Errorf("%d ready: baseline Ready=%v, cueop %v", ready, baselineReady, res.Ready)
		}
	}
}

// unstructuredPods are n observed Pods of CR r, the first ready of them
// Ready, as cueop observes them.
func unstructuredPods(n, ready int64) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for i := range n {
		status := "False"
		if i < ready {
			status = "True"
		}
		out[fmt.Sprintf("pod-%d", i)] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("r-%d", i), "namespace": "ns"},
			"status": map[string]any{"phase": "Running", "conditions": []any{
				map[string]any{"type": "Ready", "status": status},
			}},
		}}
	}
	return out
}

// typedPods are the same Pods as the baseline observes them.
func typedPods(n, ready int64) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for i := range n {
		status := corev1.ConditionFalse
		if i < ready {
			status = corev1.ConditionTrue
		}
		name := fmt.Sprintf("r-%d", i)
		out[name] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: status},
			}},
		}
	}
	return out
}

// BenchmarkRender is one reconcile's pure part, for a CR whose Pods are all
// observed Ready: cueop's render (children, status, ready) of the compiled
// template, and the baseline's builder (children) plus its status.
func BenchmarkRender(b *testing.B) {
	k := loadKind(b)
	for _, replicas := range []int64{3, 30} {
		u, rc := crs(replicas, "7.2")
		observed, pods := unstructuredPods(replicas, replicas), typedPods(replicas, replicas)
		b.Run(fmt.Sprintf("cueop/replicas=%d", replicas), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := render.Render(k, u, observed, render.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if replicas == 3 {
			full := fullPods(b, replicas)
			b.Run(fmt.Sprintf("cueop-fullpods/replicas=%d", replicas), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := render.Render(k, u, full, render.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("baseline/replicas=%d", replicas), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := baseline.Desired(rc)
				st := baseline.ComputeStatus(rc, pods)
				if len(c.Pods) != int(replicas) || st.ReadyReplicas != int32(replicas) {
					b.Fatal("wrong result")
				}
			}
		})
	}
}

// fullPods are n ready Pods as the API server returns them
// (engine/render/testdata/pod.json, as BenchmarkRenderFullPods of
// engine/render uses), named as the template names them.
func fullPods(b *testing.B, n int64) map[string]*unstructured.Unstructured {
	data, err := os.ReadFile("../engine/render/testdata/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range n {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		o.SetName(fmt.Sprintf("r-%d", i))
		out[fmt.Sprintf("pod-%d", i)] = o
	}
	return out
}
