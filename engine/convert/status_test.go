package convert_test

import (
	"reflect"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

// renamedStatus is a kind whose v2 names a status field of the hub
// otherwise: its status is converted.
const renamedStatus = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: int}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {a: int}
	toHub: {in: {spec: _, status: _}, out: {spec: a: in.spec.a, status: ready: in.status.up}}
	fromHub: {in: {spec: _, status: _}, out: {spec: a: in.spec.a, status: up: in.status.ready}}
}
`

// TestOwnStatusPassesAConvertedStatus: the status fields the engine
// writes pass a status conversion unchanged, both ways.
func TestOwnStatusPassesAConvertedStatus(t *testing.T) {
	c := mustLoad(t, renamedStatus)
	in := object(t, `{"apiVersion": "apps.test.example/v1", "kind": "App", "metadata": {"name": "x"}, "spec": {"a": 1},
	 "status": {"ready": 2, "observedGeneration": 3, "revision": "r1", "inputsDigest": "d1",
	   "immutable": {"a": 1}, "conditions": [{"type": "Ready", "status": "True"}]}}`)
	v2 := mustConvert(t, c, in, "v2")
	status := v2.Object["status"].(map[string]any)
	if status["up"] != int64(2) || status["ready"] != nil {
		t.Errorf("v2 status = %v, want ready renamed up", status)
	}
	for _, f := range []string{"conditions", "observedGeneration", "revision", template.StatusImmutable, template.StatusInputsDigest} {
		if !reflect.DeepEqual(status[f], in.Object["status"].(map[string]any)[f]) {
			t.Errorf("v2 status.%s = %v, want it unchanged", f, status[f])
		}
	}
	if back := mustConvert(t, c, v2, "v1"); !reflect.DeepEqual(back.Object, in.Object) {
		t.Errorf("round trip = %v, want %v", back.Object, in.Object)
	}
}
