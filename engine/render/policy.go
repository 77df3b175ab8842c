package render

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ScopeFunc reports whether objects of gk are namespaced. known is false
// when the kind is not known to the caller.
type ScopeFunc func(gk schema.GroupKind) (namespaced, known bool)

// clusterScoped lists the built-in cluster-scoped kinds, so that an offline
// render refuses them as the controller does (it asks the API server).
var clusterScoped = map[schema.GroupKind]bool{}

func init() {
	for _, gk := range []string{
		"Namespace", "Node", "PersistentVolume", "ComponentStatus",
		"ClusterRole.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io",
		"CustomResourceDefinition.apiextensions.k8s.io", "APIService.apiregistration.k8s.io",
		"ValidatingWebhookConfiguration.admissionregistration.k8s.io",
		"MutatingWebhookConfiguration.admissionregistration.k8s.io",
		"ValidatingAdmissionPolicy.admissionregistration.k8s.io",
		"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io",
		"MutatingAdmissionPolicy.admissionregistration.k8s.io",
		"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io",
		"StorageClass.storage.k8s.io", "CSIDriver.storage.k8s.io", "CSINode.storage.k8s.io",
		"VolumeAttachment.storage.k8s.io", "VolumeAttributesClass.storage.k8s.io",
		"PriorityClass.scheduling.k8s.io", "RuntimeClass.node.k8s.io", "IngressClass.networking.k8s.io",
		"IPAddress.networking.k8s.io", "ServiceCIDR.networking.k8s.io",
		"CertificateSigningRequest.certificates.k8s.io", "ClusterTrustBundle.certificates.k8s.io",
		"FlowSchema.flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io",
		"DeviceClass.resource.k8s.io", "ResourceSlice.resource.k8s.io",
		"TokenReview.authentication.k8s.io", "SelfSubjectReview.authentication.k8s.io",
		"SubjectAccessReview.authorization.k8s.io", "SelfSubjectAccessReview.authorization.k8s.io",
		"SelfSubjectRulesReview.authorization.k8s.io",
	} {
		clusterScoped[schema.ParseGroupKind(gk)] = true
	}
}

// BuiltinScope knows the scope of Kubernetes' built-in kinds; other kinds
// are unknown.
func BuiltinScope(gk schema.GroupKind) (namespaced, known bool) {
	if clusterScoped[gk] {
		return false, true
	}
	return true, gk.Group == "" || strings.HasSuffix(gk.Group, ".k8s.io") || !strings.Contains(gk.Group, ".")
}

// KindSet is an administrator's allow-list of child kinds.
type KindSet map[schema.GroupKind]bool

// DefaultAllowedKinds are the namespaced workload kinds a template may
// create unless the administrator says otherwise. Secrets, RBAC and anything
// that grants access are left out on purpose.
const DefaultAllowedKinds = "ConfigMap,Service,Pod,PersistentVolumeClaim,ServiceAccount," +
	"Deployment.apps,StatefulSet.apps,DaemonSet.apps,Job.batch,CronJob.batch," +
	"Ingress.networking.k8s.io,NetworkPolicy.networking.k8s.io,PodDisruptionBudget.policy," +
	"HorizontalPodAutoscaler.autoscaling"

// ParseKindSet parses a comma-separated list of Kind or Kind.group.
func ParseKindSet(s string) (KindSet, error) {
	set := KindSet{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		gk := schema.ParseGroupKind(f)
		if gk.Kind == "" || gk.Kind == "*" || strings.Contains(f, "*") {
			return nil, fmt.Errorf("allowed kinds: %q is not a Kind or Kind.group (no wildcards)", f)
		}
		set[gk] = true
	}
	return set, nil
}

// MustKindSet is ParseKindSet for constants.
func MustKindSet(s string) KindSet {
	set, err := ParseKindSet(s)
	if err != nil {
		panic(err)
	}
	return set
}

// String lists the set as ParseKindSet reads it, sorted.
func (s KindSet) String() string {
	var out []string
	for gk := range s {
		out = append(out, gk.String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
