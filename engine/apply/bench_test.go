package apply_test

import (
	"context"
	"testing"

	"github.com/cueop/cueop/engine/apply"
)

// BenchmarkNeedsApply measures the no-op check of a rendered RedisCluster
// Pod against its live object: what every reconcile pays per child. first
// is a check of a live state not seen before (both field sets computed);
// repeat is the check of a resync, when neither side changed since.
func BenchmarkNeedsApply(b *testing.B) {
	e := newEnv(b)
	c := e.c
	desired := rendered(b, e.ns, "r")["pod-0"]
	if _, err := (&apply.Applier{Client: c}).Apply(context.Background(), desired, nil); err != nil {
		b.Fatal(err)
	}
	live := e.live(b, desired)
	check := func(b *testing.B, a *apply.Applier) {
		needs, why, err := a.NeedsApply(desired, live)
		if err != nil || needs {
			b.Fatalf("NeedsApply = %v (%s), %v", needs, why, err)
		}
	}
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			check(b, &apply.Applier{Client: c})
		}
	})
	b.Run("repeat", func(b *testing.B) {
		a := &apply.Applier{Client: c}
		b.ReportAllocs()
		for b.Loop() {
			check(b, a)
		}
	})
}
