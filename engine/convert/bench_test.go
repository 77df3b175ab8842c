package convert_test

import "testing"

// BenchmarkConvert converts a RedisCluster from v1 to v2 and back, what
// the webhook does for each object of a list.
func BenchmarkConvert(b *testing.B) {
	c := redis(b)
	in := object(b, v1Obj)
	b.ReportAllocs()
	for b.Loop() {
		v2, err := c.Convert(in, "v2")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Convert(v2, "v1"); err != nil {
			b.Fatal(err)
		}
	}
}
