package render_test

import (
	"testing"

	"cuelang.org/go/cue"

	"github.com/cueop/cueop/engine/template"
)

func fillArg(replicas int64) map[string]any {
	cr := redis(map[string]any{"replicas": replicas, "version": "7.2"})
	obs := map[string]any{}
	for id, o := range readyPods(replicas) {
		obs[id] = o.Object
	}
	return map[string]any{
		"parent": map[string]any{"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(),
			"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(2)},
			"spec":     cr.Object["spec"]},
		"observed": obs,
	}
}

func BenchmarkZFill(b *testing.B) {
	k := loadKind(b, "cache.example.com", "RedisCluster")
	arg := fillArg(3)
	b.Run("fillpath", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := k.Value.FillPath(cue.Path{}, arg)
			_ = v
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = k.Value.Context().Encode(arg)
		}
	})
	enc := k.Value.Context().Encode(arg)
	b.Run("unify-encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = k.Value.Unify(enc)
		}
	})
	b.Run("unify-top", func(b *testing.B) {
		b.ReportAllocs()
		top := k.Value.Context().CompileString("_")
		for b.Loop() {
			_ = k.Value.Unify(top)
		}
	})
	_ = template.PathChildren
}
