package render_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

const vaultTemplate = `package vault

resource: {group: "imm.test.example", version: "v1", kind: "Vault"}

#Spec: {
	class: *"standard" | string @cueop(immutable)
	zone?: string @cueop(immutable)
	size:  *1 | int
	disk: {
		bytes: *1024 | int @cueop(immutable)
	}
}

parent: spec: #Spec
observed: [string]: {...}

children: config: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: "vault"
	data: class: parent.spec.class
}
status: {}
`

// TestImmutableFieldsRecordedAndChecked: render records the values of the
// @cueop(immutable) fields (defaults included, optional ones once set) and
// refuses, as InvalidSpec naming the field, its old and new value and its
// position, a change or a removal of a recorded value: what the CRD's rule
// refuses at admission, for a CR that got past it (created, or changed,
// before its CRD had the rule).
func TestImmutableFieldsRecordedAndChecked(t *testing.T) {
	k := vaultKind(t)
	if got := len(k.Immutable); got != 3 {
		t.Fatalf("%d immutable fields found, want class, zone and disk.bytes: %+v", got, k.Immutable)
	}
	res, err := render.Render(k, vault(map[string]any{"size": int64(2)}, nil), nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec.class": "standard", "spec.disk.bytes": "1024"}
	if len(res.Immutable) != 2 || res.Immutable["spec.class"] != want["spec.class"] || jsonText(res.Immutable["spec.disk.bytes"]) != "1024" {
		t.Fatalf("recorded %v, want %v (zone is not set)", res.Immutable, want)
	}
	recorded := map[string]any{"spec.class": "standard", "spec.disk.bytes": int64(1024)}
	for _, tc := range []struct {
		name string
		spec map[string]any
		rec  map[string]any
		bad  string // "" when accepted
	}{
		{"unchanged, other fields changed", map[string]any{"size": int64(5)}, recorded, ""},
		{"set for the first time", map[string]any{"zone": "eu"}, recorded, ""},
		{"nothing recorded yet", map[string]any{"class": "fast"}, nil, ""},
		{"changed", map[string]any{"class": "fast"}, recorded, `spec.class: is immutable: it was "standard" when first rendered, changed to "fast" (template `},
		{"nested, changed", map[string]any{"disk": map[string]any{"bytes": int64(2048)}}, recorded, `spec.disk.bytes: is immutable: it was 1024 when first rendered, changed to 2048`},
		{"removed", map[string]any{}, map[string]any{"spec.class": "standard", "spec.zone": "eu"}, `spec.zone: is immutable: it was "eu" when first rendered, removed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := render.Render(k, vault(tc.spec, tc.rec), nil, render.Options{})
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(res.Immutable) == 0 {
					t.Fatal("no values to record")
				}
				return
			}
			renderError(t, err, wellknown.ReasonInvalidSpec, tc.bad)
			if !strings.Contains(err.Error(), "vault/vault.cue:") {
				t.Errorf("error %q does not name the field's position", err)
			}
		})
	}
}

func jsonText(v any) string {
	switch x := v.(type) {
	case interface{ String() string }:
		return x.String()
	case string:
		return x
	}
	return ""
}
