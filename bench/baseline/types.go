package baseline

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the RedisCluster's API group and version, the same CRD
// cueop serves (crds/redisclusters.cache.example.com.yaml).
var GroupVersion = schema.GroupVersion{Group: "cache.example.com", Version: "v1"}

// Defaults of the spec, as the CRD's schema sets them.
const (
	DefaultReplicas = 3
	DefaultVersion  = "7.0"
)

// RedisCluster is the custom resource of the course chapter.
type RedisCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RedisClusterSpec   `json:"spec,omitempty"`
	Status RedisClusterStatus `json:"status,omitempty"`
}

// RedisClusterSpec is what a user asks for.
type RedisClusterSpec struct {
	// Replicas is the number of Redis Pods, one per replica.
	Replicas int32 `json:"replicas,omitempty"`
	// Version is the Redis version, used as the image tag.
	Version string `json:"version,omitempty"`
	// MinReady is the number of ready Pods that makes the cluster Ready;
	// nil means all of them.
	MinReady *int32 `json:"minReady,omitempty"`
}

// RedisClusterStatus is what the controller observes.
type RedisClusterStatus struct {
	// ReadyReplicas counts the Pods whose Ready condition is True.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Phase is Pending when no Pod is ready, Running when all are, Degraded
	// in between.
	Phase string `json:"phase,omitempty"`
	// Selector is the Pods' label selector, for the scale subresource.
	Selector string `json:"selector,omitempty"`
	// ObservedGeneration is the generation this status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RedisClusterList is a list of RedisClusters.
type RedisClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisCluster `json:"items"`
}

// AddToScheme registers RedisCluster and RedisClusterList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &RedisCluster{}, &RedisClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// The deep copies below are what controller-gen would generate, written by
// hand.

// DeepCopyInto copies in into out.
func (in *RedisCluster) DeepCopyInto(out *RedisCluster) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of in.
func (in *RedisCluster) DeepCopy() *RedisCluster {
	if in == nil {
		return nil
	}
	out := new(RedisCluster)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *RedisCluster) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out.
func (in *RedisClusterSpec) DeepCopyInto(out *RedisClusterSpec) {
	*out = *in
	if in.MinReady != nil {
		out.MinReady = new(int32)
		*out.MinReady = *in.MinReady
	}
}

// DeepCopyInto copies in into out.
func (in *RedisClusterStatus) DeepCopyInto(out *RedisClusterStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies in into out.
func (in *RedisClusterList) DeepCopyInto(out *RedisClusterList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]RedisCluster, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of in.
func (in *RedisClusterList) DeepCopy() *RedisClusterList {
	if in == nil {
		return nil
	}
	out := new(RedisClusterList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *RedisClusterList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
