package e2e

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkWebhookBind: the manager's conversion webhook listens on the pod's
// IP (cueop's own default is 127.0.0.1), where the Service reaches it.
func checkWebhookBind(t *testing.T, c corev1.Container) {
	t.Helper()
	if !slices.Contains(c.Args, "--webhook-bind-address=$(POD_IP)") {
		t.Errorf("container args %v: want --webhook-bind-address=$(POD_IP)", c.Args)
	}
	for _, e := range c.Env {
		if e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return
		}
	}
	t.Errorf("container env %v: want POD_IP from status.podIP", c.Env)
}

// TestWebhookNetworkPolicy: config/default keeps the Pod network off the
// conversion webhook's port and leaves metrics and probes open.
func TestWebhookNetworkPolicy(t *testing.T) {
	var np networkingv1.NetworkPolicy
	typed(t, find(t, buildDefault(t), "NetworkPolicy", "cueop-webhook"), &np)
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] != "controller" || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("policy selects %v, types %v", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	for _, rule := range np.Spec.Ingress {
		webhook := slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return *p.Port == intstr.FromString("webhook") })
		if !webhook {
			if len(rule.From) != 0 {
				t.Errorf("metrics and probes: from %v, want open", rule.From)
			}
			continue
		}
		if len(rule.Ports) != 1 || len(rule.From) != 1 || rule.From[0].IPBlock == nil || len(rule.From[0].IPBlock.Except) == 0 {
			t.Errorf("webhook port: %+v, want one ipBlock with the Pod network excepted", rule)
		}
		return
	}
	t.Error("no ingress rule of the webhook port")
}
