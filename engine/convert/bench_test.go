package convert_test

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkConvert converts a RedisCluster from v1 to v2 and back, what
// the webhook does for each object of a list. cpu-µs/conversion is the
// process's CPU time per conversion, which a loaded machine does not
// inflate as it does the wall-clock ns/op.
func BenchmarkConvert(b *testing.B) {
	c := redis(b)
	in := object(b, v1Obj)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		v2, err := c.Convert(in, "v2")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Convert(v2, "v1"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(2*b.N), "cpu-µs/conversion")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
