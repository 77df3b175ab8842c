package schemacompat_test

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/schemacompat"
)

// crd is a CRD of a kind with the given versions (name: spec schema), the
// first the storage version, and the stored versions in its status.
func crd(t *testing.T, versions [][2]string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := &apiextensionsv1.CustomResourceDefinition{}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v[0], Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema(t, root(v[1]))},
		})
	}
	c.Status.StoredVersions = stored
	return c
}

const intSpec = `{type: object, properties: {a: {type: integer}}}`

func TestCompareCRDs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, next *apiextensionsv1.CustomResourceDefinition
		want      []string
	}{
		{"version removed that storedVersions lists",
			crd(t, [][2]string{{"v1", intSpec}, {"v1beta1", intSpec}}, "v1", "v1beta1"), crd(t, [][2]string{{"v1", intSpec}}),
			[]string{"B v1beta1: version served -> not served"}},
		{"version removed that nothing was stored at",
			crd(t, [][2]string{{"v1", intSpec}, {"v1beta1", intSpec}}, "v1"), crd(t, [][2]string{{"v1", intSpec}}),
			[]string{"S v1beta1: version served -> not served"}},
		{"version removed from a CRD without status (a file)",
			crd(t, [][2]string{{"v1", intSpec}, {"v1beta1", intSpec}}), crd(t, [][2]string{{"v1", intSpec}}),
			[]string{"B v1beta1: version served -> not served"}},
		{"version added",
			crd(t, [][2]string{{"v1", intSpec}}, "v1"), crd(t, [][2]string{{"v1", intSpec}, {"v2", intSpec}}),
			[]string{"S v2: version not served -> served"}},
		{"each served version compared",
			crd(t, [][2]string{{"v1", intSpec}, {"v2", intSpec}}, "v1"),
			crd(t, [][2]string{{"v1", intSpec}, {"v2", `{type: object, properties: {a: {type: string}}}`}}),
			[]string{"B v2 spec.a: type integer -> string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(schemacompat.CompareCRDs(tc.old, tc.next))
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCompareCRDsPrinterColumnsAndScale(t *testing.T) {
	old := crd(t, [][2]string{{"v1", intSpec}}, "v1")
	next := old.DeepCopy()
	v := &next.Spec.Versions[0]
	v.AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "A", Type: "integer", JSONPath: ".spec.a"}}
	v.Subresources = &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
		SpecReplicasPath: ".spec.a", StatusReplicasPath: ".status.a"}}
	got := schemacompat.CompareCRDs(old, next)
	if len(got) != 2 || len(schemacompat.Breaking(got)) != 0 {
		t.Errorf("changes %v, want 2 safe ones (printer columns, subresources)", summary(got))
	}
}

// crs decodes a YAML list of CRs.
func crs(t *testing.T, y string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := yaml.Unmarshal([]byte(y), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCountAndRefusal(t *testing.T) {
	old := schema(t, root(`{type: object, properties: {replicas: {type: integer, default: 3}, version: {type: string, default: "7.0"},
		servers: {type: array, items: {type: object, properties: {port: {type: integer}, name: {type: string}}}}}}`))
	next := schema(t, root(`{type: object, properties: {size: {type: integer, default: 3}, version: {type: string, default: "7.2"},
		servers: {type: array, items: {type: object, properties: {port: {type: string}, name: {type: string}}}}}}`))
	changes := schemacompat.Breaking(schemacompat.Compare("v1", old, next))
	stored := crs(t, `
- spec: {replicas: 5, version: "7.0", servers: [{name: a, port: 1}]}
- spec: {replicas: 3, version: "7.0", servers: [{name: a}]}
- spec: {replicas: 3, version: "6.2"}
`)
	// Counted a page at a time, as the operator lists them.
	schemacompat.Count(changes, nil)
	schemacompat.Tally(changes, "v1", stored[:2])
	schemacompat.Tally(changes, "v1", stored[2:])
	schemacompat.Tally(changes, "v2", stored) // another version's CRs count for its changes only
	changes[0].Pos = "templates/redis/redis.cue:31:2"
	r := &schemacompat.Refusal{Kind: "RedisCluster.cache.example.com", Changes: changes, Stored: 3}
	want := `RedisCluster.cache.example.com: breaking schema change refused: it would change what stored CRs mean (the kind has 3 stored CRs)
  v1 spec.replicas -> spec.size: renamed (at templates/redis/redis.cue:31:2): set in 3 of 3 stored CRs
  v1 spec.servers[_].port: type integer -> string: set in 1 of 3 stored CRs
  v1 spec.version: default "7.0" -> "7.2": set in 3 of 3 stored CRs, 2 of them to "7.0", the old default (by the user or by defaulting: the API server fills defaults on read, so the two cannot be told apart)
  way forward: ` + schemacompat.WayForward
	if got := r.Error(); got != want {
		t.Errorf("refusal:\n%s\nwant:\n%s", got, want)
	}
}
