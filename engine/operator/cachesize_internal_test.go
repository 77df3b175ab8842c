package operator

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// BenchmarkCachedPod measures the heap one cached child Pod holds, as the
// children cache decodes it (protobuf, typed) from a Pod the API server
// returns: applied by cueop as the RedisCluster template renders it,
// scheduled and Running on a kwok node. Each variant keeps 2,000 decoded
// copies alive and reports the live heap per copy (B/pod):
//
//	whole          every managedFields entry (no transform)
//	cached         compactChild, the children cache's transform today
//	spec-scalars   compactChild and, besides, the spec's lists and maps
//	               dropped (containers, volumes, tolerations, nodeSelector):
//	               what a transform keeping only what the RedisCluster
//	               template and drift detection read would leave
func BenchmarkCachedPod(b *testing.B) {
	raw := runningPodBytes(b)
	for _, v := range []struct {
		name string
		keep func(*corev1.Pod)
	}{
		{"whole", func(*corev1.Pod) {}},
		{"cached", func(p *corev1.Pod) { _, _ = compactChild(p) }},
		{"spec-scalars", func(p *corev1.Pod) {
			_, _ = compactChild(p)
			s := &p.Spec
			s.Containers, s.InitContainers, s.Volumes, s.Tolerations, s.NodeSelector = nil, nil, nil, nil, nil
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(heapPerPod(b, raw, v.keep), "B/pod")
			}
		})
	}
}

// heapPerPod decodes raw 2,000 times, applies keep to each copy and
// returns the live heap per copy.
func heapPerPod(b *testing.B, raw []byte, keep func(*corev1.Pod)) float64 {
	const n = 2000
	dec := clientgoscheme.Codecs.UniversalDeserializer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		obj, _, err := dec.Decode(raw, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		pods[i] = obj.(*corev1.Pod)
		keep(pods[i])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(pods)
	return float64(after.HeapAlloc-before.HeapAlloc) / n
}

// runningPodBytes applies, as cueop, a Pod as the RedisCluster template
// renders it, waits for it to run and returns it as the API server sends
// it in protobuf.
func runningPodBytes(b *testing.B) []byte {
	ctx := context.Background()
	ns := clustertest.Namespace(b)
	c, err := client.New(clustertest.Config(), client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "size-0", "namespace": ns, "labels": map[string]any{
			"app": "redis", "cluster": "size", "app.kubernetes.io/managed-by": "cueop", "cueop.dev/id": "pod-0"},
			"annotations": map[string]any{wellknown.AnnotationAppliedHash: "0123456789abcdef"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"name": "redis", "image": "redis:7.0", "args": []any{"/etc/redis/redis.conf"},
				"ports":        []any{map[string]any{"name": "redis", "containerPort": int64(6379)}},
				"volumeMounts": []any{map[string]any{"name": "config", "mountPath": "/etc/redis"}},
			}},
			"volumes": []any{map[string]any{"name": "config", "configMap": map[string]any{"name": "size-config"}}},
		},
	}}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(pod), client.FieldOwner(apply.DefaultFieldManager)); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(clustertest.Config())
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs := kubernetes.NewForConfigOrDie(cfg)
	clustertest.Eventually(b, 60*time.Second, func() string {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "size-0", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.Conditions) == 0 {
			return "Pod size-0 is " + string(p.Status.Phase)
		}
		return ""
	})
	raw, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("size-0").
		SetHeader("Accept", "application/vnd.kubernetes.protobuf").Do(ctx).Raw()
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
