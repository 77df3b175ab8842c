package reconcile

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// cachedPod is a Pod as the children cache holds it: cueop's managedFields
// entry, labels, a container with ports and a probe, status conditions.
func cachedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "r-0", Namespace: "ns", UID: "pod-uid", ResourceVersion: "7",
			Labels:      map[string]string{"app": "r"},
			Annotations: map[string]string{"cueop.dev/applied-hash": "abc"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "cueop", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)},
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "redis", Image: "redis:7",
			Ports:          []corev1.ContainerPort{{ContainerPort: 6379}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// The children cache is listed without a deep copy: each list item is a
// struct copy of the cache's object, sharing its maps and slices. Converting
// the item must leave the cache's object as it was, and the result must
// share nothing writable with it.
func TestToUnstructuredLeavesTheCachedObject(t *testing.T) {
	cached := cachedPod()
	want := cached.DeepCopy()
	list := &corev1.PodList{}
	if err := meta.SetList(list, []runtime.Object{cached}); err != nil { // as the cache's reader without a deep copy
		t.Fatal(err)
	}
	u, err := toUnstructured(&list.Items[0], corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cached, want) {
		t.Fatalf("the cached Pod changed:\n%#v\nwant\n%#v", cached, want)
	}
	mf, _ := u.Object["metadata"].(map[string]any)["managedFields"].([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "cueop" || mf[0].(map[string]any)["fieldsV1"] != string(want.ManagedFields[0].FieldsV1.Raw) {
		t.Fatalf("managedFields of the result: %#v", mf)
	}
	// Writing the result (as the template view and the status code may)
	// reaches nothing of the cache's object.
	labels := u.Object["metadata"].(map[string]any)["labels"].(map[string]any)
	labels["app"] = "changed"
	ctr := u.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	ctr["image"] = "changed"
	ctr["ports"].([]any)[0].(map[string]any)["containerPort"] = int64(1)
	u.Object["status"].(map[string]any)["conditions"].([]any)[0].(map[string]any)["status"] = "False"
	if !reflect.DeepEqual(cached, want) {
		t.Fatalf("writing the converted Pod changed the cached one:\n%#v", cached)
	}
}

// BenchmarkListedPodConversion is a Pod's cost in a reconcile's list of its
// children: the struct copy the cache's reader makes and the conversion,
// against the conversion of what the settled check reads and the deep copy
// a default list adds.
func BenchmarkListedPodConversion(b *testing.B) {
	cached := cachedPod()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	b.Run("shallow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			item := *cached
			if _, err := toUnstructured(&item, gvk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("partial", func(b *testing.B) { // what a reconcile converts (partialview.go)
		keep := map[string]bool{"status": true}
		b.ReportAllocs()
		for b.Loop() {
			item := *cached
			if _, err := viewOf(&item, gvk, keep); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deep-copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			item := cached.DeepCopy()
			if _, err := toUnstructured(item, gvk); err != nil {
				b.Fatal(err)
			}
		}
	})
}
