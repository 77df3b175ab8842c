package convert_test

import (
	"math"
	"testing"
)

// TestMemoFloatsAsFresh: floats and ints around the thresholds of their
// JSON forms convert from the memo as they do fresh.
func TestMemoFloatsAsFresh(t *testing.T) {
	var xs []any
	for e := 0; e <= 22; e++ {
		xs = append(xs, math.Pow(10, float64(e)), 1.5*math.Pow(10, float64(e)), int64(math.Pow(10, float64(e))/3)*3+1)
	}
	xs = append(xs, int64(1<<60), int64(1<<53+1), int64(123456789012345678), 0.1, 1e-7, 2.5e-300, math.MaxFloat64)
	nd, nj := 0, 0
	for _, x := range xs {
		c, f := numsConv(t), numsConv(t)
		mk := func() map[string]any { return map[string]any{"r": x} }
		conv(c, appObj("v1", mk(), true), "v2")
		hit := conv(c, appObj("v1", mk(), true), "v2")
		fresh := conv(f, appObj("v1", mk(), true), "v2")
		if !same(hit, fresh) {
			nd++
			a, _ := hit.obj.MarshalJSON()
			b, _ := fresh.obj.MarshalJSON()
			if string(a) != string(b) {
				nj++
				t.Errorf("r=%v JSON differs: %s vs %s", x, a, b)
			}
		}
	}
	if nd > 0 {
		t.Errorf("%d of %d differ as Go values, %d as JSON", nd, len(xs), nj)
	}
}
