package crdgen

import (
	"slices"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/schemacompat"
)

// changes generates the CRDs of old and next and returns their changes,
// located in next, as `B|S <change> @line:column`.
func changes(t *testing.T, old, next string) []string {
	t.Helper()
	k := compileKind(t, next)
	cs := schemacompat.CompareCRDs(generateValid(t, old), generateValid(t, next))
	Locate(k, cs)
	var out []string
	for _, c := range cs {
		if c.What == "description" {
			continue
		}
		mark := "S "
		if c.Breaking {
			mark = "B "
		}
		at := strings.TrimPrefix(c.Pos, "spec.cue:")
		if c.Removed {
			at = "parent " + at
		}
		out = append(out, mark+c.String()+" @"+at)
	}
	slices.Sort(out)
	return out
}

// TestSchemaChangesFromCUE compares the CRDs generated from two versions
// of a #Spec: the same schema written another way is no change, and each
// change is located in the new template.
func TestSchemaChangesFromCUE(t *testing.T) {
	const base = `#Spec: {
	replicas: *3 | int & >=1 & <=100
	version:  *"7.0" | string
	minReady?: int & >=1 & <=replicas
}
`
	for _, tc := range []struct {
		name, next string
		want       []string
	}{
		{"written another way", `#Spec: {
	minReady?: int & <=replicas & >=1
	version: string | *"7.0"
	replicas: int & <=100 & >=1 | *3
}
`, nil},
		{"renamed", `#Spec: {
	size: *3 | int & >=1 & <=100
	version:  *"7.0" | string
	minReady?: int & >=1 & <=size
}
`, []string{"B v1alpha1 spec.replicas -> spec.size: renamed @2:2"}},
		{"removed", `#Spec: {
	version:  *"7.0" | string
}
`, []string{"B v1alpha1 spec.minReady: removed @parent 1:1", "B v1alpha1 spec.replicas: removed @parent 1:1",
			"S v1alpha1 spec: x-kubernetes-validations !has(self.minReady) || self.minReady <= self.replicas -> none @1:1"}},
		{"narrowed and new field", `#Spec: {
	replicas: *3 | int & >=1 & <=10
	version:  *"7.2" | string
	minReady?: int & >=1 & <=replicas
	tier?: "cache" | "db"
}
`, []string{`B v1alpha1 spec.replicas: maximum <=100 -> <=10 @2:2`, `B v1alpha1 spec.version: default "7.0" -> "7.2" @3:2`,
			`S v1alpha1 spec.tier: added none -> optional @5:2`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(t, base, tc.next)
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
