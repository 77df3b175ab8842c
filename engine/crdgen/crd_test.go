package crdgen

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

const redisSrc = `
// Spec is the desired state of a Redis cluster.
#Spec: {
	// replicas is the number of Redis pods.
	replicas: *3 | int & >=1
	// version is the Redis version.
	version: *"7.0" | string
}
#Status: {
	readyReplicas: int
	phase: "Pending" | "Ready"
	selector?: string
}
`

// fromResource generates the CRD of redisSrc with res and requires that it
// passes Validate.
func fromResource(t *testing.T, res template.Resource) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	k := compileKind(t, redisSrc)
	crd, err := FromResource(res, k.Spec, k.Status)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if err := Validate(crd); err != nil {
		t.Fatalf("validate: %v\n%s", err, toYAML(t, crd))
	}
	return crd
}

func TestGenerateMetadata(t *testing.T) {
	k := compileKind(t, redisSrc)
	k.Resource = template.Resource{Group: "cache.example.com", Version: "v1", Kind: "RedisCluster"}
	crd, err := Generate(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(crd); err != nil {
		t.Fatal(err)
	}
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		t.Errorf("type meta %v", crd.TypeMeta)
	}
	if crd.Name != "redisclusters.cache.example.com" {
		t.Errorf("name %q", crd.Name)
	}
	if crd.Labels[wellknown.LabelManagedBy] != "cueop" || crd.Annotations[wellknown.AnnotationRevision] != "r1" {
		t.Errorf("labels %v, annotations %v", crd.Labels, crd.Annotations)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped || len(crd.Spec.Versions) != 1 {
		t.Fatalf("scope %s, %d versions", crd.Spec.Scope, len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage || v.Subresources.Status == nil || v.Subresources.Scale != nil {
		t.Errorf("version %+v", v)
	}
	k.Revision = ""
	if crd, _ := Generate(k); crd.Annotations != nil {
		t.Errorf("annotations %v without a revision", crd.Annotations)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		res  template.Resource
		want apiextensionsv1.CustomResourceDefinitionNames
	}{{
		name: "defaults",
		res:  template.Resource{Kind: "RedisCluster"},
		want: apiextensionsv1.CustomResourceDefinitionNames{Plural: "redisclusters", Singular: "rediscluster",
			Kind: "RedisCluster", ListKind: "RedisClusterList", Categories: []string{"cueop"}},
	}, {
		name: "given names, short names and categories",
		res: template.Resource{Kind: "Policy", Plural: "policyset", Singular: "pol",
			ShortNames: []string{"po", "pl"}, Categories: []string{"all", "cueop", "storage"}},
		want: apiextensionsv1.CustomResourceDefinitionNames{Plural: "policyset", Singular: "pol",
			Kind: "Policy", ListKind: "PolicyList", ShortNames: []string{"po", "pl"},
			Categories: []string{"cueop", "all", "storage"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.res.Group, tt.res.Version = "example.com", "v1"
			got := fromResource(t, tt.res).Spec.Names
			if toYAML(t, got) != toYAML(t, tt.want) {
				t.Errorf("names:\n%s\nwant:\n%s", toYAML(t, got), toYAML(t, tt.want))
			}
		})
	}
}

func TestPluralize(t *testing.T) {
	for in, want := range map[string]string{
		"rediscluster": "redisclusters", "redis": "redises", "box": "boxes", "quiz": "quizes",
		"batch": "batches", "mesh": "meshes", "policy": "policies", "gateway": "gateways",
		"key": "keys", "y": "ys", "": "",
	} {
		if got := Pluralize(in); got != want {
			t.Errorf("Pluralize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrinterColumns(t *testing.T) {
	tests := []struct {
		name    string
		columns []template.PrinterColumn
		want    string
	}{{
		name: "defaults",
		want: `
- {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: The status of the Ready condition.}
- {name: Reason, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].reason', description: The reason of the Ready condition., priority: 1}
- {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
- {name: Revision, type: string, jsonPath: .status.revision, description: The template revision the resource was last rendered with., priority: 1}`,
	}, {
		name: "custom columns get Age and Revision",
		columns: []template.PrinterColumn{
			{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
			{Name: "Phase", JSONPath: ".status.phase", Description: "The phase.", Priority: 1},
		},
		want: `
- {name: Replicas, type: integer, jsonPath: .spec.replicas}
- {name: Phase, type: string, jsonPath: .status.phase, description: The phase., priority: 1}
- {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
- {name: Revision, type: string, jsonPath: .status.revision, description: The template revision the resource was last rendered with., priority: 1}`,
	}, {
		name: "custom Age and Revision are kept",
		columns: []template.PrinterColumn{
			{Name: "Created", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Version", Type: "string", JSONPath: ".spec.version"},
			{Name: "Rev", Type: "string", JSONPath: ".status.revision"},
		},
		want: `
- {name: Created, type: date, jsonPath: .metadata.creationTimestamp}
- {name: Version, type: string, jsonPath: .spec.version}
- {name: Rev, type: string, jsonPath: .status.revision}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := testResource
			res.PrinterColumns = tt.columns
			got := fromResource(t, res).Spec.Versions[0].AdditionalPrinterColumns
			var want []apiextensionsv1.CustomResourceColumnDefinition
			if err := yamlUnmarshal(tt.want, &want); err != nil {
				t.Fatal(err)
			}
			if toYAML(t, got) != toYAML(t, want) {
				t.Errorf("columns:\n%s\nwant:\n%s", toYAML(t, got), toYAML(t, want))
			}
		})
	}
}

func TestScale(t *testing.T) {
	res := testResource
	res.Scale = &template.Scale{SpecReplicasPath: "spec.replicas", StatusReplicasPath: ".status.readyReplicas",
		LabelSelectorPath: ".status.selector"}
	scale := fromResource(t, res).Spec.Versions[0].Subresources.Scale
	if scale == nil || scale.SpecReplicasPath != ".spec.replicas" || scale.StatusReplicasPath != ".status.readyReplicas" ||
		scale.LabelSelectorPath == nil || *scale.LabelSelectorPath != ".status.selector" {
		t.Fatalf("scale %+v", scale)
	}
	for _, bad := range []struct{ spec, status, want string }{
		{".spec.count", ".status.readyReplicas", "specReplicasPath .spec.count: no such field"},
		{".spec.version", ".status.readyReplicas", `.spec.version: the field is of type "string", want "integer"`},
		{".spec.replicas", ".status.phase", `statusReplicasPath .status.phase: the field is of type "string"`},
	} {
		res.Scale = &template.Scale{SpecReplicasPath: bad.spec, StatusReplicasPath: bad.status}
		k := compileKind(t, redisSrc)
		_, err := FromResource(res, k.Spec, k.Status)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("scale %s %s: error %v, want %q", bad.spec, bad.status, err, bad.want)
		}
	}
}

func TestRootSchema(t *testing.T) {
	crd := fromResource(t, testResource)
	root := rootOf(crd)
	if len(root.Required) != 0 {
		t.Errorf("root requires %v; a spec without required fields defaults to {}", root.Required)
	}
	assertSchema(t, root.Properties["apiVersion"], "{type: string, description: "+quote(apiVersionDoc)+"}")
	assertSchema(t, root.Properties["metadata"], "{type: object}")
	spec := root.Properties["spec"]
	if string(spec.Default.Raw) != "{}" || spec.Description != "Spec is the desired state of a Redis cluster." {
		t.Errorf("spec default %s, description %q", spec.Default.Raw, spec.Description)
	}
	status := root.Properties["status"]
	if len(status.Required) != 0 {
		t.Errorf("status requires %v; the engine may write its conditions alone", status.Required)
	}
	names := slices.Sorted(maps.Keys(status.Properties))
	if want := []string{"conditions", "inputsDigest", "observedGeneration", "phase", "readyReplicas", "revision", "selector"}; !slices.Equal(names, want) {
		t.Errorf("status fields %v, want %v", names, want)
	}
	conditions := status.Properties["conditions"]
	if *conditions.XListType != "map" || !slices.Equal(conditions.XListMapKeys, []string{"type"}) {
		t.Errorf("conditions list type %v keys %v", *conditions.XListType, conditions.XListMapKeys)
	}
	assertSchema(t, conditions.Items.Schema.Properties["status"],
		`{type: string, enum: ["True", "False", Unknown], description: "status of the condition, one of True, False, Unknown."}`)
	assertSchema(t, status.Properties["observedGeneration"], "{type: integer, format: int64, description: "+
		"observedGeneration is the .metadata.generation that the status was computed for.}")
}

func TestRequiredSpec(t *testing.T) {
	crd := generateValid(t, "#Spec: {name: string, replicas: *1 | int}")
	root := rootOf(crd)
	if !slices.Equal(root.Required, []string{"spec"}) || root.Properties["spec"].Default != nil {
		t.Errorf("root requires %v, spec default %v; want spec required without a default", root.Required,
			root.Properties["spec"].Default)
	}
}

func TestNoStatus(t *testing.T) {
	crd := generateValid(t, "#Spec: {}")
	status := rootOf(crd).Properties["status"]
	if status.Type != "object" || len(status.Properties) != 4 || status.Description != statusDoc {
		t.Errorf("status without #Status:\n%s", toYAML(t, status))
	}
}

func TestResourceErrors(t *testing.T) {
	k := compileKind(t, redisSrc)
	_, err := FromResource(template.Resource{Kind: "X"}, k.Spec, k.Status)
	if err == nil || !strings.Contains(err.Error(), "resource.group, resource.version: must be set") {
		t.Errorf("error %v", err)
	}
	if _, err := Generate(nil); err == nil {
		t.Error("Generate(nil) did not fail")
	}
}

// TestValidateRejects checks that Validate reports what the API server
// would refuse.
func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		want   string
	}{{
		name:   "name",
		mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "wrong.example.com" },
		want:   `must be spec.names.plural+"."+spec.group`,
	}, {
		name: "array without items",
		mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			spec := specOf(c)
			spec.Properties["tags"] = apiextensionsv1.JSONSchemaProps{Type: "array"}
			rootOf(c).Properties["spec"] = spec
		},
		want: "items: Required value",
	}, {
		name: "field without type",
		mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			spec := specOf(c)
			spec.Properties["x"] = apiextensionsv1.JSONSchemaProps{}
			rootOf(c).Properties["spec"] = spec
		},
		want: "must not be empty for specified object fields",
	}, {
		name: "default out of bounds",
		mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			spec := specOf(c)
			p := spec.Properties["replicas"]
			p.Default = &apiextensionsv1.JSON{Raw: []byte("0")}
			spec.Properties["replicas"] = p
			rootOf(c).Properties["spec"] = spec
		},
		want: "should be greater than or equal to 1",
	}, {
		name: "printer column type",
		mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].Type = "text"
		},
		want: "additionalPrinterColumns[0].type",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := fromResource(t, testResource)
			tt.mutate(crd)
			err := Validate(crd)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if err := Validate(nil); err == nil {
		t.Error("Validate(nil) did not fail")
	}
}
