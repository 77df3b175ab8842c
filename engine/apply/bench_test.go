package apply_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/localcluster/clustertest"
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

// BenchmarkApplyAnswer measures the client's side of one apply of a
// rendered RedisCluster Pod that the API server writes (a label changes
// each time): answered with the whole object, decoded into maps, against
// MetadataResponses' answer of its metadata only. The allocations are the
// client's alone; the time includes the API server's write.
func BenchmarkApplyAnswer(b *testing.B) {
	e := newEnv(b)
	responses, err := apply.NewMetadataResponses(clustertest.Config(), nil, e.c.RESTMapper())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		a    *apply.Applier
	}{
		{"whole", &apply.Applier{Client: e.c}},
		{"metadata", &apply.Applier{Client: e.c, Responses: responses}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// -count runs this again in the same namespace: the Pod of an
			// earlier run is there already.
			desired := rendered(b, e.ns, "answer-"+bc.name)["pod-0"]
			if e.live(b, desired) == nil {
				if _, err := bc.a.Apply(context.Background(), desired, nil); err != nil {
					b.Fatal(err)
				}
			}
			live := e.live(b, desired)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				d := desired.DeepCopy()
				labels := d.GetLabels()
				labels["round"] = strconv.Itoa(i)
				d.SetLabels(labels)
				if _, err := bc.a.Apply(context.Background(), d, live); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
