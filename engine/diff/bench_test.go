package diff_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/diff"
)

// BenchmarkDiffFleet diffs a converged fleet of RedisClusters (replicas 3:
// a ConfigMap, a Service and 3 Pods each; $DIFF_BENCH_N of them, default
// 100 so that make bench's run of every engine benchmark stays short) on
// the local control plane, with cueop diff's defaults (8 workers, client QPS
// 100 / burst 200): with the templates unchanged, and with an edit that
// relabels every Pod (a dry run per Pod), and with one that changes an
// immutable Pod field (two per Pod: the refused apply, and the apply under a
// free name that shows the Pod created anew). Run it alone:
//
//	DIFF_BENCH_N=1000 go test -run '^$' -bench DiffFleet -benchtime 1x ./engine/diff/
func BenchmarkDiffFleet(b *testing.B) {
	n := 100
	if s := os.Getenv("DIFF_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	ns := fleetOf(b, n, func(int) int64 { return 3 })
	b.Logf("%d RedisClusters converged in %s", n, time.Since(start).Round(time.Second))
	opts := diff.Options{Namespace: ns}
	for _, c := range []struct {
		name  string
		dir   string
		check func(diff.KindSummary) bool
	}{
		{"unchanged", copyTemplates(b), func(s diff.KindSummary) bool { return s.Unchanged == n }},
		{"relabel", edited(b, podLabels...), func(s diff.KindSummary) bool { return s.Changing == n && s.Children[diff.Update] == 3*n }},
		{"recreate", edited(b, podArgs...), func(s diff.KindSummary) bool { return s.Changing == n && s.Children[diff.Recreate] == 3*n }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				r := run(b, c.dir, opts)
				if s := redis(b, r); !c.check(s) {
					b.Fatalf("unexpected summary: %+v", s)
				}
				b.Logf("%s: %d CRs diffed in %s", c.name, n, time.Since(start).Round(10*time.Millisecond))
			}
		})
	}
}
