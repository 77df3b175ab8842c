package convert_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cueop/cueop/engine/convert"
)

// TestMemoSameAsFreshConversion: a conversion found in the converter's
// memo is the one a converter that never converted anything returns, for
// specs with and without defaults, at both versions, with an annotation
// carrying the target's spec (kept or stale); and a caller changing a
// result does not change the next.
func TestMemoSameAsFreshConversion(t *testing.T) {
	objs := []string{
		v1Obj,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"d","namespace":"t"},"spec":{}}`,
		`{"apiVersion":"cache.example.com/v2","kind":"RedisCluster","metadata":{"name":"e","namespace":"t"},"spec":{"size":4,"redisVersion":"7.2"}}`,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"f","namespace":"t",
			"annotations":{"cueop.dev/conversion.v2":"{\"size\":4,\"redisVersion\":\"7.2\"}"}},"spec":{"replicas":4,"version":"7.2"}}`,
		`{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"g","namespace":"t",
			"annotations":{"cueop.dev/conversion.v2":"{\"size\":9,\"redisVersion\":\"7.2\"}"}},"spec":{"replicas":4,"version":"7.2"}}`,
	}
	for _, lenient := range []bool{false, true} {
		c := redis(t)
		if lenient {
			c = c.Lenient()
		}
		for _, src := range objs {
			in := object(t, src)
			for _, to := range []string{"v1", "v2"} {
				first := mustConvert(t, c, in, to)
				first.Object["spec"].(map[string]any)["injected"] = "by the caller"
				again := mustConvert(t, c, in, to)
				fresh := redis(t)
				if lenient {
					fresh = fresh.Lenient()
				}
				want := mustConvert(t, fresh, in, to)
				if !reflect.DeepEqual(again.Object, want.Object) {
					t.Errorf("lenient %v, %s to %s: from the memo %v, fresh %v", lenient, in.GetName(), to, again.Object, want.Object)
				}
			}
		}
	}
}

// TestMemoKeepsStrictAndLenientApart: a spec its schema refuses converts
// leniently (the webhook's converter) and is still refused by the strict
// converter derived from the same one afterwards, whose memo it shares.
func TestMemoKeepsStrictAndLenientApart(t *testing.T) {
	c := redis(t)
	old := object(t, `{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"old","namespace":"t"},
		"spec":{"replicas":3,"version":"7.0","minReady":5}}`)
	mustConvert(t, c.Lenient(), old, "v2")
	mustConvert(t, c.Lenient(), old, "v2")
	var se *convert.SpecError
	if _, err := c.Convert(old, "v2"); !errors.As(err, &se) {
		t.Fatalf("strict Convert after lenient ones = %v, want a SpecError", err)
	}
}
