package localcluster_test

import (
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster"
)

// BenchmarkStart measures Start until ready (reported as s/start), and Stop:
//
//	go test ./localcluster -run '^$' -bench Start -benchtime 3x
//
// The test binary's shared cluster runs alongside, as it does for the tests.
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts localcluster.Options
	}{
		{"all", localcluster.Options{}},
		{"control-plane-only", localcluster.Options{ControlPlaneOnly: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var starting, stopping time.Duration
			for range b.N {
				t0 := time.Now()
				c, err := localcluster.Start(b.Context(), bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := c.Stop(); err != nil {
					b.Fatal(err)
				}
				starting, stopping = starting+t1.Sub(t0), stopping+time.Since(t1)
			}
			b.ReportMetric(starting.Seconds()/float64(b.N), "s/start")
			b.ReportMetric(stopping.Seconds()/float64(b.N), "s/stop")
		})
	}
}
