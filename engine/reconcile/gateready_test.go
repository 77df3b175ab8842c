package reconcile

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

func gateObj(kind string, fields map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x", "namespace": "ns"}}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// TestGateReady: the readiness the gates use, case by case.
func TestGateReady(t *testing.T) {
	modes := func(_ context.Context, class string) (string, error) {
		switch class {
		case "wffc":
			return BindingModeWaitForFirstConsumer, nil
		case "immediate":
			return "Immediate", nil
		}
		return "", errors.New("forbidden")
	}
	pvc := func(class, phase string) *unstructured.Unstructured {
		return gateObj("PersistentVolumeClaim", map[string]any{"spec": map[string]any{"storageClassName": class}, "status": map[string]any{"phase": phase}})
	}
	no, yes := false, true
	for name, tc := range map[string]struct {
		c     render.Child
		live  *unstructured.Unstructured
		modes BindingModes
		ready bool
		why   string
	}{
		"absent":                       {live: nil, why: "to exist"},
		"readyWhen false over kstatus": {c: render.Child{ReadyWhen: &no}, live: gateObj("ConfigMap", nil), why: "to be ready (readyWhen)"},
		"readyWhen true over kstatus":  {c: render.Child{ReadyWhen: &yes}, live: pvc("immediate", "Pending"), ready: true},
		"kstatus current":              {live: gateObj("ConfigMap", nil), ready: true},
		"claim waits for consumer":     {live: pvc("wffc", "Pending"), modes: modes, ready: true},
		"claim of an immediate class":  {live: pvc("immediate", "Pending"), modes: modes, why: "to be ready"},
		"claim, no modes known":        {live: pvc("wffc", "Pending"), why: "to be ready"},
		"claim lost":                   {live: pvc("wffc", "Lost"), modes: modes, why: "to be ready"},
		"class unreadable":             {live: pvc("secret", "Pending"), modes: modes, why: "to be ready (its StorageClass secret could not be read: forbidden)"},
		"load balancer, no address":    {live: gateObj("Service", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}), ready: true},
		"pod not ready":                {live: gateObj("Pod", map[string]any{"status": map[string]any{"phase": "Pending"}}), why: "to be ready"},
	} {
		t.Run(name, func(t *testing.T) {
			ready, why := gateReady(context.Background(), tc.c, tc.live, tc.modes)
			if ready != tc.ready || (!ready && why != tc.why) {
				t.Errorf("gateReady = %v, %q; want %v, %q", ready, why, tc.ready, tc.why)
			}
		})
	}
}
