package testkit

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric sums the values (a counter's, a gauge's, a histogram's count of
// samples) of the series of metric name in controller-runtime's registry
// whose labels hold every key/value pair of kv; found says whether any
// series matched.
func Metric(t testing.TB, name string, kv ...string) (sum float64, found bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	Must(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labelsHold(labels, kv) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
				found = true
			}
		}
	}
	return sum, found
}

// MetricSum is Metric's sum: 0 when no series matched.
func MetricSum(t testing.TB, name string, kv ...string) float64 {
	t.Helper()
	sum, _ := Metric(t, name, kv...)
	return sum
}

func labelsHold(labels map[string]string, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if labels[kv[i]] != kv[i+1] {
			return false
		}
	}
	return true
}
