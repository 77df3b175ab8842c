package render_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// TestUnguardedObservedReadIsExplained: a template that reads an observed
// child without a guard fails while the child is not observed, with an
// error that says observed children may be absent and shows the guard; it
// renders once the child is observed. An undefined field elsewhere gets no
// such hint.
func TestUnguardedObservedReadIsExplained(t *testing.T) {
	for name, tc := range map[string]struct{ status, ref string }{
		"selector": {`phase: observed.cm.data.phase`, "observed.cm"},
		"index":    {`phase: observed["web-0"].data.phase`, `observed["web-0"]`},
	} {
		t.Run(name, func(t *testing.T) {
			k := compileKind(t, "app/app.cue", `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
children: {
	cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "a-cm"}
	"web-0": {apiVersion: "v1", kind: "ConfigMap", metadata: name: "a-web-0"}
}
status: {`+tc.status+`}
`)
			_, err := render.Render(k, app(1), nil, render.Options{})
			var rerr *render.Error
			if !errors.As(err, &rerr) {
				t.Fatalf("error = %v, want a render.Error", err)
			}
			for _, want := range []string{"app.cue:10:", "undefined field", "observed children may be absent", "if " + tc.ref + " != _|_ {...}"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			live := map[string]*unstructured.Unstructured{}
			for _, id := range []string{"cm", "web-0"} {
				live[id] = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "a-" + id, "namespace": "ns"}, "data": map[string]any{"phase": "Up"}}}
			}
			res, err := render.Render(k, app(1), live, render.Options{})
			if err != nil {
				t.Fatalf("render with the children observed: %v", err)
			}
			if res.Status["phase"] != "Up" {
				t.Errorf("status %v, want phase Up", res.Status)
			}
		})
	}
	k := compileKind(t, "app/app.cue", `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {n: *1 | int, name?: string}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: parent.spec.name}
`)
	_, err := render.Render(k, app(1), nil, render.Options{})
	if err == nil || strings.Contains(err.Error(), "observed") {
		t.Errorf("error = %v, want one without the observed hint", err)
	}
}
