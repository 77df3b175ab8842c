package baseline

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// The InSync functions tell whether applying want would change live (the
// object as the informer cache holds it), so that the reconciler sends no
// request for a child in sync. They check every field Desired sets, with
// server-side apply's semantics: a field another manager added (a label, a
// defaulted protocol, the service account token volume) is not a change;
// an atomic field (args, the Service selector) must be equal.

func metaInSync(want *metav1ac.ObjectMetaApplyConfiguration, live *metav1.ObjectMeta) bool {
	for k, v := range want.Labels {
		if lv, ok := live.Labels[k]; !ok || lv != v {
			return false
		}
	}
	for _, w := range want.OwnerReferences {
		if !slices.ContainsFunc(live.OwnerReferences, func(r metav1.OwnerReference) bool {
			return r.UID == *w.UID && r.Controller != nil && *r.Controller && r.Name == *w.Name && r.Kind == *w.Kind
		}) {
			return false
		}
	}
	return true
}

// ConfigMapInSync reports whether live already holds want.
func ConfigMapInSync(want *corev1ac.ConfigMapApplyConfiguration, live *corev1.ConfigMap) bool {
	if !metaInSync(want.ObjectMetaApplyConfiguration, &live.ObjectMeta) {
		return false
	}
	for k, v := range want.Data {
		if lv, ok := live.Data[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// ServiceInSync reports whether live already holds want.
func ServiceInSync(want *corev1ac.ServiceApplyConfiguration, live *corev1.Service) bool {
	if !metaInSync(want.ObjectMetaApplyConfiguration, &live.ObjectMeta) {
		return false
	}
	spec := want.Spec
	if len(spec.Selector) != len(live.Spec.Selector) {
		return false
	}
	for k, v := range spec.Selector {
		if live.Spec.Selector[k] != v {
			return false
		}
	}
	for _, wp := range spec.Ports {
		i := slices.IndexFunc(live.Spec.Ports, func(p corev1.ServicePort) bool {
			return p.Port == *wp.Port && (wp.Protocol == nil || p.Protocol == *wp.Protocol)
		})
		if i < 0 {
			return false
		}
		lp := live.Spec.Ports[i]
		if lp.Name != *wp.Name || (wp.TargetPort != nil && lp.TargetPort != *wp.TargetPort) {
			return false
		}
	}
	return true
}

// PodInSync reports whether live already holds want. Most of a Pod's spec
// is immutable: a difference there cannot be applied, and the apply error
// says so.
func PodInSync(want *corev1ac.PodApplyConfiguration, live *corev1.Pod) bool {
	if !metaInSync(want.ObjectMetaApplyConfiguration, &live.ObjectMeta) {
		return false
	}
	for _, wc := range want.Spec.Containers {
		i := slices.IndexFunc(live.Spec.Containers, func(c corev1.Container) bool { return c.Name == *wc.Name })
		if i < 0 || !containerInSync(&wc, &live.Spec.Containers[i]) {
			return false
		}
	}
	for _, wv := range want.Spec.Volumes {
		i := slices.IndexFunc(live.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == *wv.Name })
		if i < 0 {
			return false
		}
		lv := live.Spec.Volumes[i]
		if wv.ConfigMap != nil && (lv.ConfigMap == nil || lv.ConfigMap.Name != *wv.ConfigMap.Name) {
			return false
		}
	}
	return true
}

func containerInSync(want *corev1ac.ContainerApplyConfiguration, live *corev1.Container) bool {
	if live.Image != *want.Image || !slices.Equal(live.Args, want.Args) {
		return false
	}
	for _, wp := range want.Ports {
		i := slices.IndexFunc(live.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == *wp.ContainerPort })
		if i < 0 || live.Ports[i].Name != *wp.Name {
			return false
		}
	}
	for _, wm := range want.VolumeMounts {
		i := slices.IndexFunc(live.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == *wm.MountPath })
		if i < 0 || live.VolumeMounts[i].Name != *wm.Name {
			return false
		}
	}
	return true
}
