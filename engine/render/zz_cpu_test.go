package render_test

import (
	"fmt"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

func cpuNow() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkZCPU(b *testing.B) {
	rk := loadKind(b, "cache.example.com", "RedisCluster")
	sk := loadKind(b, "web.example.com", "StaticSite")
	run := func(b *testing.B, f func() error) {
		b.ReportAllocs()
		start := cpuNow()
		for b.Loop() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
	}
	for _, n := range []int64{3, 30} {
		cr := redis(map[string]any{"replicas": n, "version": "7.2"})
		obs := readyPods(n)
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			run(b, func() error { _, err := render.Render(rk, cr, obs, render.Options{}); return err })
		})
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "web.example.com/v1", "kind": "StaticSite",
		"metadata": map[string]any{"name": "docs", "namespace": "web", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	obs := staticSiteObserved()
	b.Run("staticsite", func(b *testing.B) {
		run(b, func() error { _, err := render.Render(sk, cr, obs, render.Options{}); return err })
	})
}
