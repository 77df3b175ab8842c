package crdgen

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker/workertest"
)

// TestSpokeSpecReferringToItself: a spoke's #Spec that refers to #Spec,
// meaning the hub's, refers to its own (CUE resolves #Spec in the nearest
// scope that declares it): the error names the cycle at its CUE position
// and how to reach the hub's schema, not "expression nested more than 100
// levels deep". The remedy it gives generates.
func TestSpokeSpecReferringToItself(t *testing.T) {
	const kind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {storage: *"1Gi" | string, replicas: *1 | int}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {
		size: *1 | int
		storage: SPEC.storage
	}
	toHub: {in: spec: _, out: spec: {replicas: in.spec.size, storage: in.spec.storage}}
	fromHub: {in: spec: _, out: spec: {size: in.spec.replicas, storage: in.spec.storage}}
}
`
	load := func(src string) (*template.Kind, error) {
		set, err := template.Load(workertest.Templates(t, map[string]string{"app/app.cue": src}))
		if err != nil {
			return nil, err
		}
		_, err = Generate(set.Kinds[0])
		return set.Kinds[0], err
	}
	_, err := load(strings.Replace(kind, "SPEC", "#Spec", 1))
	if err == nil {
		t.Fatal("a spoke's #Spec referring to itself generated")
	}
	for _, want := range []string{"app/app.cue:9:3", "versions.v2.#Spec.storage refers to versions.v2.#Spec.storage, itself",
		"inside versions.v2, #Spec names v2's own #Spec, not the hub's", "let hubSpec = #Spec"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "levels deep") {
		t.Errorf("error still speaks of the nesting:\n%v", err)
	}
	fixed := strings.Replace(strings.Replace(kind, "SPEC", "hubSpec", 1), "versions: v2: {", "let hubSpec = #Spec\nversions: v2: {", 1)
	if _, err := load(fixed); err != nil {
		t.Errorf("the remedy the error gives: %v", err)
	}
}
