package convert_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkConvert converts a RedisCluster from v1 to v2 and back, what
// the webhook does for each object of a list, each time with a spec the
// converter has not seen (its version differs): the CUE evaluation of
// both conversions. cpu-µs/conversion is the process's CPU time per
// conversion, which a loaded machine does not inflate as it does the
// wall-clock ns/op.
func BenchmarkConvert(b *testing.B) {
	benchConvert(b, func(in *unstructured.Unstructured, i int) {
		_ = unstructured.SetNestedField(in.Object, fmt.Sprintf("7.%d", i), "spec", "version")
	})
}

// BenchmarkConvertSeen is BenchmarkConvert with the same spec each time:
// a conversion of a spec converted before (a CR's status or metadata
// written, its spec unchanged) is found in the converter's memo.
func BenchmarkConvertSeen(b *testing.B) {
	benchConvert(b, func(*unstructured.Unstructured, int) {})
}

func benchConvert(b *testing.B, vary func(*unstructured.Unstructured, int)) {
	c := redis(b)
	in := object(b, v1Obj)
	b.ReportAllocs()
	start := cpuTime()
	i := 0
	for b.Loop() {
		vary(in, i)
		i++
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
