package crdgen

import (
	"strings"
	"testing"
)

// TestImmutableStatus: a kind with @cueop(immutable) fields gets
// status.immutable, where render records their values; a kind without
// gets none, and a #Status field of that name is refused where it would
// collide.
func TestImmutableStatus(t *testing.T) {
	st := rootOf(generateValid(t, `#Spec: {class: *"standard" | string @cueop(immutable)}`)).Properties["status"]
	p, ok := st.Properties["immutable"]
	if !ok || p.Type != "object" || p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields {
		t.Fatalf("status.immutable = %+v, want an object preserving its fields", p)
	}
	st = rootOf(generateValid(t, `#Spec: {class: *"standard" | string}
#Status: {immutable: bool}`)).Properties["status"]
	if st.Properties["immutable"].Type != "boolean" {
		t.Fatalf("a kind without immutable fields keeps its own status.immutable: %+v", st.Properties["immutable"])
	}
	_, err := Generate(compileKind(t, `#Spec: {class: string @cueop(immutable)}
#Status: {immutable: bool}`))
	if err == nil || !strings.Contains(err.Error(), "@cueop(immutable)") || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("Generate = %v, want #Status.immutable refused", err)
	}
}
