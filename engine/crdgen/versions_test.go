package crdgen

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/worker/workertest"
)

// redisCRD generates the CRD of the shipped RedisCluster, hub v1 and spoke
// v2, and requires that it passes Validate.
func redisCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	set := templatetest.Load(t, "../../templates")
	crd, err := Generate(set.Lookup("cache.example.com", "RedisCluster"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(crd); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return crd
}

func TestMultiVersionCRD(t *testing.T) {
	crd := redisCRD(t)
	var got []string
	for _, v := range crd.Spec.Versions {
		got = append(got, v.Name+served(v))
	}
	if s := strings.Join(got, " "); s != "v1(served,storage) v2(served)" {
		t.Errorf("versions = %s, want v1 stored and v2 served", s)
	}
	v2 := crd.Spec.Versions[1]
	spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties["size"]; !ok || len(spec.XValidations) != 1 || !strings.Contains(spec.XValidations[0].Rule, "self.minReady <= self.size") {
		t.Errorf("v2 spec schema = %s, want size and the CEL rule of minReady <= size", toYAML(t, spec))
	}
	if v2.Subresources.Scale == nil || v2.Subresources.Scale.SpecReplicasPath != ".spec.size" {
		t.Errorf("v2 scale = %+v, want .spec.size", v2.Subresources.Scale)
	}
	if v2.AdditionalPrinterColumns[0].JSONPath != ".spec.size" {
		t.Errorf("v2 columns = %+v, want Size first", v2.AdditionalPrinterColumns)
	}
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook.ClientConfig.Service.Name != WebhookService ||
		*c.Webhook.ClientConfig.Service.Path != "/convert" || c.Webhook.ConversionReviewVersions[0] != "v1" {
		t.Errorf("conversion = %s, want the cueop webhook", toYAML(t, c))
	}
}

func served(v apiextensionsv1.CustomResourceDefinitionVersion) string {
	var f []string
	if v.Served {
		f = append(f, "served")
	}
	if v.Storage {
		f = append(f, "storage")
	}
	if v.Deprecated {
		f = append(f, "deprecated")
	}
	return "(" + strings.Join(f, ",") + ")"
}

func TestDeprecatedSpoke(t *testing.T) {
	src := `package app
resource: {group: "apps.test.example", version: "v2", kind: "App"}
#Spec: {a: int}
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: {a: int}
	deprecated: true
	deprecationWarning: "use v2"
	toHub: {in: spec: _, out: spec: a: in.spec.a}
	fromHub: {in: spec: _, out: spec: a: in.spec.a}
}
`
	set, err := template.Load(workertest.Templates(t, map[string]string{"app/app.cue": src}))
	if err != nil {
		t.Fatal(err)
	}
	k := set.Kinds[0]
	crd, err := Generate(k)
	if err != nil {
		t.Fatal(err)
	}
	v1 := crd.Spec.Versions[1]
	if v1.Name != "v1" || served(v1) != "(served,deprecated)" || *v1.DeprecationWarning != "use v2" || crd.Spec.Versions[0].Storage != true {
		t.Errorf("versions = %s, want v2 stored, v1 deprecated", toYAML(t, crd.Spec.Versions))
	}
}

// TestAddingASpokeIsSafe: the CRD of a kind that gains a spoke serves one
// version more, a safe change; a breaking change of the spoke's schema is
// located in the spoke's #Spec.
func TestAddingASpokeIsSafe(t *testing.T) {
	one := `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: int}
parent: spec: #Spec
children: {}
`
	spoke := `
versions: v2: {
	#Spec: {b: int}
	toHub: {in: spec: _, out: spec: a: in.spec.b}
	fromHub: {in: spec: _, out: spec: b: in.spec.a}
}
`
	gen := func(src string) (*template.Kind, *apiextensionsv1.CustomResourceDefinition) {
		set, err := template.Load(workertest.Templates(t, map[string]string{"app/app.cue": src}))
		if err != nil {
			t.Fatal(err)
		}
		crd, err := Generate(set.Kinds[0])
		if err != nil {
			t.Fatal(err)
		}
		return set.Kinds[0], crd
	}
	_, old := gen(one)
	_, next := gen(one + spoke)
	if b := schemacompat.Breaking(schemacompat.CompareCRDs(old, next)); len(b) != 0 {
		t.Errorf("adding v2: breaking changes %v, want none", b)
	}
	k, narrowed := gen(one + strings.Replace(spoke, "b: int}", "b: int & <=3}", 1))
	b := schemacompat.Breaking(schemacompat.CompareCRDs(next, narrowed))
	Locate(k, b)
	if len(b) != 1 || b[0].Version != "v2" || !strings.Contains(b[0].Pos, "app.cue:8:") {
		t.Errorf("narrowing v2: %+v, want one breaking change of v2 at app.cue:8", b)
	}
}
