package reconcile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestNotReadyBlamesAbsentReadLast: Ready=False is ReadsAbsentField only
// once the child the absent read names exists and every child is
// otherwise ready; before, it is ChildrenNotReady, with the read in a note.
func TestNotReadyBlamesAbsentReadLast(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(1)}}}
	}
	yes := true
	// ready: (*observed.cm.bogus | true) && <the deployment is ready>
	kind := &template.Kind{Outputs: &template.Outputs{Ready: true, Reads: []template.ObservedRead{
		{In: "ready", ID: "cm", Path: []string{"bogus"}},
	}}}
	const read = "ready reads observed.cm.bogus, which ConfigMap v1 does not have"
	for _, tc := range []struct {
		name       string
		observed   []string
		deployGate *bool
		reason     string
	}{
		{"the child read is not observed", []string{"deploy"}, &yes, wellknown.ReasonChildrenNotReady},
		{"another child is not ready", []string{"cm", "deploy"}, nil, wellknown.ReasonChildrenNotReady},
		{"another child is not observed", []string{"cm"}, &yes, wellknown.ReasonChildrenNotReady},
		{"every child is otherwise ready", []string{"cm", "deploy"}, &yes, wellknown.ReasonReadsAbsentField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			children := []render.Child{
				{ID: "cm", Object: obj("v1", "ConfigMap")},
				{ID: "deploy", Object: obj("apps/v1", "Deployment"), ReadyWhen: tc.deployGate},
			}
			observed := map[string]*unstructured.Unstructured{}
			for _, id := range tc.observed {
				for _, c := range children {
					if c.ID == id {
						observed[id] = c.Object
					}
				}
			}
			r := &run{kind: kind, res: &render.Result{Children: children}, v: &view{observed: observed}}
			reason, msg := r.notReady()
			if reason != tc.reason || !strings.Contains(msg, read) {
				t.Errorf("notReady = %s %q, want %s naming %q", reason, msg, tc.reason, read)
			}
			if tc.reason == wellknown.ReasonChildrenNotReady && !strings.HasPrefix(msg, "waiting for children to be ready; note: "+read) {
				t.Errorf("message %q: want the usual one with a note of the read", msg)
			}
		})
	}

	// readyWhen.cm: *(observed.cm.bogus == "x") | false: the gate that
	// reads the absent field is not counted against its own child.
	gated := &template.Kind{Outputs: &template.Outputs{Reads: []template.ObservedRead{
		{In: "readyWhen.cm", ID: "cm", Path: []string{"bogus"}},
	}}}
	no := false
	children := []render.Child{{ID: "cm", Object: obj("v1", "ConfigMap"), ReadyWhen: &no}}
	r := &run{kind: gated, res: &render.Result{Children: children}, v: &view{observed: map[string]*unstructured.Unstructured{"cm": children[0].Object}}}
	if reason, msg := r.notReady(); reason != wellknown.ReasonReadsAbsentField {
		t.Errorf("notReady of a gate = %s %q, want %s", reason, msg, wellknown.ReasonReadsAbsentField)
	}
}
