package render_test

// The render tests' kit: compiling kinds, the CRs they render and the check
// of a render.Error.

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/template/templatetest"
)

// loadKind is the kind of group and kind of the project's templates.
var loadKind = templatetest.Shipped

func redis(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "uid-1", "generation": int64(2)},
		"spec":     spec,
	}}
}

// renderError fails the test unless err is a *render.Error of reason whose
// text says each of wants, and returns it.
func renderError(t testing.TB, err error, reason string, wants ...string) *render.Error {
	t.Helper()
	var rerr *render.Error
	if !errors.As(err, &rerr) || rerr.Reason != reason {
		t.Fatalf("error = %v, want a %s render.Error", err, reason)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	return rerr
}

// kindWithChildren compiles a one-kind templates module whose children are
// given as CUE.
func kindWithChildren(t *testing.T, children string) *template.Kind {
	t.Helper()
	return compileKind(t, "app/app.cue", `package app
import "list"
_range: list.Range
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int & >=0 & <=100000}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: {
`+children+`
}
`)
}

// compileKind compiles a templates module of one package, file (e.g.
// "app/app.cue") holding src, and returns its kind.
func compileKind(t testing.TB, file, src string) *template.Kind {
	t.Helper()
	return templatetest.Compile(t, map[string]string{file: src})
}

func app(n int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.test.example/v1", "kind": "App",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u"},
		"spec":     map[string]any{"n": n},
	}}
}

// tryCompile is compileKind that returns the load error.
func tryCompile(t *testing.T, src string) (*template.Kind, error) {
	t.Helper()
	return templatetest.TryCompile(t, map[string]string{"app/app.cue": src})
}

func configMap(ns, name string, lbl map[string]string, data map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}}
	if lbl != nil {
		o.SetLabels(lbl)
	}
	return o
}

// authorsTemplates holds the Blog test kind: a retained claim, a wave-0
// migration Job, wave-1 Deployment and Service, a referenced ConfigMap.
const authorsTemplates = "../../testdata/authors/templates"

func loadBlog(t testing.TB) *template.Kind {
	t.Helper()
	return templatetest.Lookup(t, templatetest.Load(t, authorsTemplates), "authors.example.com", "Blog")
}

func blog(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authors.example.com/v1", "kind": "Blog",
		"metadata": map[string]any{"name": "b", "namespace": "ns", "uid": "uid-1"},
		"spec":     spec,
	}}
}

// observingApp compiles the kind App (app/app.cue) of #Spec spec whose
// parent has a name and which observes its children, the rest of its
// source being rest: rest starts at line 6 of app.cue.
func observingApp(t testing.TB, spec, rest string) *template.Kind {
	t.Helper()
	return compileKind(t, "app/app.cue", `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: `+spec+`
parent: {metadata: {name: string}, spec: #Spec}
observed: [string]: {...}
`+rest)
}

// kindFrom compiles one kind "host" whose children are children (CUE).
func kindFrom(t *testing.T, children string) *template.Kind {
	t.Helper()
	src := `package host
resource: {group: "host.test.example", version: "v1", kind: "Host"}
#Spec: {}
parent: spec: #Spec
children: {
` + children + `
}
`
	return compileKind(t, "host/host.cue", src)
}

func host(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "host.test.example/v1", "kind": "Host",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-h", "generation": int64(1)},
		"spec":     map[string]any{},
	}}
}

func vaultKind(t *testing.T) *template.Kind {
	t.Helper()
	return compileKind(t, "vault/vault.cue", vaultTemplate)
}

func vault(spec, recorded map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "imm.test.example/v1", "kind": "Vault",
		"metadata": map[string]any{"name": "v", "namespace": "ns", "uid": "uid-v", "generation": int64(2)},
		"spec":     spec,
	}
	if recorded != nil {
		obj["status"] = map[string]any{render.StatusImmutable: recorded}
	}
	return &unstructured.Unstructured{Object: obj}
}
