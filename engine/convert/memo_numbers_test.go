package convert_test

import (
	"testing"
)

const passthrough = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {r?: number}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {r?: number}
	toHub: {in: spec: _, out: spec: in.spec}
	fromHub: {in: spec: _, out: spec: in.spec}
}
`

// TestMemoKeepsNumberTypes: cueop vet's order, a sample at v1 then the same
// at v2 on one converter, passes as on a fresh one: a float CUE writes as
// 1E+18 stays a float when found in the memo
// (crdgen.AtLimits of r: number & <=1e18 in both versions).
func TestMemoKeepsNumberTypes(t *testing.T) {
	c, err := load(t, passthrough)
	if err != nil {
		t.Fatal(err)
	}
	spec := func() map[string]any { return map[string]any{"r": float64(1e18)} }
	if err := c.CheckRoundTrip(spec(), "v1", "v2"); err != nil {
		t.Fatalf("v1 via v2: %v", err)
	}
	if err := c.CheckRoundTrip(spec(), "v2", "v1"); err != nil {
		t.Errorf("v2 via v1, after v1 via v2 on the same converter: %v", err)
	}
	f, _ := load(t, passthrough)
	if err := f.CheckRoundTrip(spec(), "v2", "v1"); err != nil {
		t.Errorf("v2 via v1, fresh converter: %v", err)
	}
}

// TestMemoIntToComputedFloat: an int whose conversion computes a float.
func TestMemoIntToComputedFloat(t *testing.T) {
	for _, n := range []int64{1 << 60, 1<<53 + 1, 7, 123456789012345678} {
		c, f := numsConv(t), numsConv(t)
		mk := func() map[string]any { return map[string]any{"r": n} }
		conv(c, appObj("v1", mk(), true), "v2")
		hit := conv(c, appObj("v1", mk(), true), "v2")
		fresh := conv(f, appObj("v1", mk(), true), "v2")
		if !same(hit, fresh) {
			t.Errorf("r=%d: hit %v, fresh %v", n, hit, fresh)
		}
	}
}
