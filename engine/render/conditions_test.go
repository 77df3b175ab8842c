package render_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// TestRenderConditions: the Blog's own conditions are computed from what
// is observed, sorted by type, a bool status written "True" or "False".
func TestRenderConditions(t *testing.T) {
	k := loadBlog(t)
	cr := blog(map[string]any{"settings": map[string]any{"name": "s"}})
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "b-migrate-schema"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}}}
	res, err := render.Render(k, cr, map[string]*unstructured.Unstructured{"migrate": job}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []render.Condition{
		{Type: "Available", Status: "False", Reason: "NoPodAvailable"},
		{Type: "Exposed", Status: "False", Reason: "ServiceMissing"},
		{Type: "Migrated", Status: "True", Reason: "JobComplete", Message: "migration Job b-migrate-schema"},
	}
	if !reflect.DeepEqual(res.Conditions, want) {
		t.Errorf("conditions = %+v\nwant %+v", res.Conditions, want)
	}
	packed, ok := render.Pack(res)
	if !ok || !reflect.DeepEqual(packed.Unpack().Conditions, want) {
		t.Errorf("conditions lost by Pack and Unpack")
	}
}

// TestRenderRefusesConditions: what load cannot see (a type computed by a
// comprehension, a status that depends on the CR) is refused by the
// render, at the condition's position.
func TestRenderRefusesConditions(t *testing.T) {
	const kind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {kind: string, status: string}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
conditions: {
	if parent.spec.kind == "Ready" {Ready: {status: true, reason: "Because"}}
	if parent.spec.kind == "READY" {READY: {status: true, reason: "Because"}}
	if parent.spec.kind == "is migrated" {"is migrated": {status: true, reason: "Because"}}
	if parent.spec.kind == "Migrated" {Migrated: {status: parent.spec.status, reason: "Because"}}
}
`
	k := compileKind(t, "app/app.cue", kind)
	pos := regexp.MustCompile(`app\.cue:\d+:\d+: `)
	for name, c := range map[string]struct{ kind, status, want string }{
		"engine type": {"Ready", "True", "conditions.Ready: Ready is written by cueop"},
		// kubectl wait matches types ignoring case, the first one found.
		"engine type in other case": {"READY", "True", "conditions.READY: READY is written by cueop (types are matched ignoring case)"},
		"not qualified":             {"is migrated", "True", `conditions.is migrated: type "is migrated" is not a qualified name`},
		"bad status":                {"Migrated", "Yes", "conditions.Migrated.status: "},
	} {
		t.Run(name, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.test.example/v1", "kind": "App",
				"metadata": map[string]any{"name": "a", "namespace": "ns"},
				"spec":     map[string]any{"kind": c.kind, "status": c.status}}}
			_, err := render.Render(k, cr, nil, render.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !pos.MatchString(err.Error()) {
				t.Errorf("error %v, want %q at its app.cue position", err, c.want)
			}
		})
	}
}
