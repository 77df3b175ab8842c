package baseline

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// The baseline's own field manager and management label. Its children carry
// the template's labels (app, cluster) plus LabelManagedBy=ManagedByValue,
// which is what its cache selects on.
const (
	FieldManager   = "redis-baseline"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "redis-baseline"
)

// RedisConf is templates/rediscluster/redis.conf, the file the CUE template
// embeds; TestSameObjects fails when they differ.
const RedisConf = `# Redis configuration mounted into every Pod of a RedisCluster.
# Edit this file and the ConfigMap follows; the Pods read it at start.
bind 0.0.0.0
port 6379
protected-mode no
appendonly yes
maxmemory-policy allkeys-lru
`

const redisPort = 6379

// Children are the objects a RedisCluster owns, as server-side apply
// configurations: exactly the fields the controller owns, nothing else.
type Children struct {
	ConfigMap *corev1ac.ConfigMapApplyConfiguration
	Service   *corev1ac.ServiceApplyConfiguration
	// Pods[i] is the Pod <name>-<i>.
	Pods []*corev1ac.PodApplyConfiguration
}

// Default fills what the CRD's defaults fill, for objects that did not go
// through the API server.
func Default(rc *RedisCluster) {
	if rc.Spec.Replicas == 0 {
		rc.Spec.Replicas = DefaultReplicas
	}
	if rc.Spec.Version == "" {
		rc.Spec.Version = DefaultVersion
	}
}

// Desired builds the children of a defaulted rc: what
// templates/rediscluster/rediscluster.cue renders, with the baseline's
// management label instead of cueop's.
func Desired(rc *RedisCluster) Children {
	name, ns := rc.Name, rc.Namespace
	labels := func() map[string]string {
		return map[string]string{"app": "redis", "cluster": name, LabelManagedBy: ManagedByValue}
	}
	owner := ownerRef(rc)
	configName := name + "-config"
	c := Children{
		ConfigMap: corev1ac.ConfigMap(configName, ns).WithLabels(labels()).WithOwnerReferences(owner...).
			WithData(map[string]string{"redis.conf": RedisConf}),
		Service: corev1ac.Service(name, ns).WithLabels(labels()).WithOwnerReferences(owner...).
			WithSpec(corev1ac.ServiceSpec().
				WithSelector(map[string]string{"app": "redis", "cluster": name}).
				WithPorts(corev1ac.ServicePort().WithName("redis").WithPort(redisPort).
					WithTargetPort(intstr.FromString("redis")))),
		Pods: make([]*corev1ac.PodApplyConfiguration, rc.Spec.Replicas),
	}
	image := "redis:" + rc.Spec.Version
	for i := range c.Pods {
		c.Pods[i] = corev1ac.Pod(podName(name, i), ns).WithLabels(labels()).WithOwnerReferences(owner...).
			WithSpec(corev1ac.PodSpec().
				WithContainers(corev1ac.Container().WithName("redis").WithImage(image).
					WithArgs("/etc/redis/redis.conf").
					WithPorts(corev1ac.ContainerPort().WithName("redis").WithContainerPort(redisPort)).
					WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/redis"))).
				WithVolumes(corev1ac.Volume().WithName("config").
					WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(configName))))
	}
	return c
}

func podName(cluster string, i int) string { return cluster + "-" + strconv.Itoa(i) }

// ownerRef is the controller reference to rc; none when rc has no uid yet.
func ownerRef(rc *RedisCluster) []*metav1ac.OwnerReferenceApplyConfiguration {
	if rc.UID == "" {
		return nil
	}
	return []*metav1ac.OwnerReferenceApplyConfiguration{metav1ac.OwnerReference().
		WithAPIVersion(GroupVersion.String()).WithKind("RedisCluster").WithName(rc.Name).WithUID(rc.UID).
		WithController(true).WithBlockOwnerDeletion(true)}
}

// ComputeStatus is rc's status given its Pods by name (the Pods rc
// controls): readyReplicas counts the wanted Pods whose Ready condition is
// True, never the spec. The Ready condition keeps its transition time while
// its status does not change.
func ComputeStatus(rc *RedisCluster, pods map[string]*corev1.Pod) RedisClusterStatus {
	replicas := int(rc.Spec.Replicas)
	ready := int32(0)
	for i := range replicas {
		if p := pods[podName(rc.Name, i)]; p != nil && p.DeletionTimestamp == nil && podReady(p) {
			ready++
		}
	}
	st := RedisClusterStatus{
		ReadyReplicas:      ready,
		Selector:           "app=redis,cluster=" + rc.Name,
		ObservedGeneration: rc.Generation,
	}
	switch {
	case int(ready) == replicas:
		st.Phase = "Running"
	case ready == 0:
		st.Phase = "Pending"
	default:
		st.Phase = "Degraded"
	}
	minReady := rc.Spec.Replicas
	if rc.Spec.MinReady != nil {
		minReady = *rc.Spec.MinReady
	}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ChildrenNotReady",
		Message: "waiting for children to be ready", ObservedGeneration: rc.Generation}
	if ready >= minReady {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Ready", "every child is ready"
	}
	if len(rc.Status.Conditions) > 0 {
		st.Conditions = make([]metav1.Condition, len(rc.Status.Conditions))
		copy(st.Conditions, rc.Status.Conditions)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
