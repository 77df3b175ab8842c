package convert_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const tiered = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: int, tier?: string}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {size: *3 | int, tier: *"gold" | string}
	toHub: {in: spec: _, out: spec: {replicas: in.spec.size, if in.spec.tier != _|_ {tier: in.spec.tier}}}
	fromHub: {in: spec: _, out: spec: {size: in.spec.replicas, if in.spec.tier != _|_ {tier: in.spec.tier}}}
}
`

// As the webhook decodes a review's object (unstructured.UnmarshalJSON).
func decoded(t *testing.T, s string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMemoNotPoisonedByAFloat: a review sent with size 3.0 (not the API
// server: anyone who reaches the webhook port) does not change the
// conversion of the same spec with size 3 that follows.
func TestMemoNotPoisonedByAFloat(t *testing.T) {
	c, _ := load(t, tiered)
	f, _ := load(t, tiered)
	c, f = c.Lenient(), f.Lenient()
	attacker := `{"apiVersion":"apps.test.example/v2","kind":"App","metadata":{"name":"x","namespace":"t"},"spec":{"size":3.0}}`
	legit := `{"apiVersion":"apps.test.example/v2","kind":"App","metadata":{"name":"x","namespace":"t"},"spec":{"size":3}}`
	a := conv(c, decoded(t, attacker), "v1")
	got := conv(c, decoded(t, legit), "v1")
	want := conv(f, decoded(t, legit), "v1")
	if !same(got, want) {
		t.Errorf("attacker's: %v\nlegit after it: %v\nlegit fresh:    %v", a, got, want)
	}
}
