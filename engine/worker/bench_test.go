package worker_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/worker"
)

// BenchmarkRenderIPC renders a RedisCluster of 3 replicas, its Pods
// observed as the API server returns them, in process and in a worker: the
// difference is what isolation costs a render (encoding, two pipe
// crossings, decoding, and the worker's accounting reads of /proc).
func BenchmarkRenderIPC(b *testing.B) {
	set := templatetest.Load(b, "../../templates")
	k := set.Lookup("cache.example.com", "RedisCluster")
	in := render.Inputs{Kind: k, Parent: redis(), Observed: fullPods(b)}
	p := worker.New(worker.Options{Workers: 1})
	defer p.Close()
	for name, ev := range map[string]render.Evaluator{"inprocess": render.InProcess{}, "worker": p} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpu(p)
			for b.Loop() {
				if _, err := ev.Render(context.Background(), in, render.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu(p)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// cpu is the CPU time of this process and of p's workers: the cost of a
// render, wherever it runs.
func cpu(p *worker.Pool) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + p.CPU()
}

func redis() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-r", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(3), "version": "7.2"},
	}}
}

func fullPods(b *testing.B) map[string]*unstructured.Unstructured {
	data, err := os.ReadFile("../render/testdata/pod.json")
	if err != nil {
		b.Fatal(err)
	}
	observed := map[string]*unstructured.Unstructured{}
	for i, id := range []string{"pod-0", "pod-1", "pod-2"} {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		o.SetName("r-" + string(rune('0'+i)))
		observed[id] = o
	}
	return observed
}
