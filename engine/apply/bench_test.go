package apply_test

import (
	"context"
	"testing"

	"github.com/cueop/cueop/engine/apply"
)

// BenchmarkNeedsApply measures the no-op check of a rendered RedisCluster
// Pod against its live object: what every reconcile pays per child.
func BenchmarkNeedsApply(b *testing.B) {
	e := newEnv(b)
	a := &apply.Applier{Client: e.c}
	desired := rendered(b, e.ns, "r")["pod-0"]
	if _, err := a.Apply(context.Background(), desired, nil); err != nil {
		b.Fatal(err)
	}
	live := e.live(b, desired)
	b.ReportAllocs()
	for b.Loop() {
		needs, why, err := a.NeedsApply(desired, live)
		if err != nil || needs {
			b.Fatalf("NeedsApply = %v (%s), %v", needs, why, err)
		}
	}
}
