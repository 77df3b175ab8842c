package reconcile

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// metaView gives what the reflective converter gives of a Pod's metadata
// (viewOf's path before metaView), on random metadata where each field is
// absent, empty or set: zero and nil values, empty maps and slices, times
// with and without a zone, every optional pointer.
func TestMetaViewAsConverter(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	var metaField topField
	for _, f := range topFields(reflect.TypeOf(corev1.Pod{})) {
		if f.name == "metadata" {
			metaField = f
		}
	}
	r := rand.New(rand.NewSource(1))
	fill := randfill.New().RandSource(rand.NewSource(2)).NilChance(0.3).NumElements(0, 3).Funcs(
		func(s *string, c randfill.Continue) {
			if c.Intn(3) > 0 {
				*s = c.String(6)
			}
		},
		func(i *int64, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*i = c.Int63() - c.Int63()
			}
		},
		func(tm *metav1.Time, c randfill.Continue) {
			switch c.Intn(3) {
			case 0:
			case 1:
				*tm = metav1.NewTime(time.Unix(c.Int63n(1<<34), 0).In(time.FixedZone("x", 3600)))
			default:
				*tm = metav1.NewTime(time.Unix(c.Int63n(1<<34), c.Int63n(1e9)))
			}
		},
	)
	for i := range 3000 {
		var pod corev1.Pod
		fill.Fill(&pod.ObjectMeta)
		if r.Intn(10) == 0 {
			pod.ObjectMeta = metav1.ObjectMeta{}
		}
		want, err := fieldView(reflect.ValueOf(&pod).Elem(), metaField)
		if err != nil {
			t.Fatal(err)
		}
		u, err := viewOf(&pod, gvk, map[string]bool{})
		if err != nil {
			t.Fatal(err)
		}
		got := u.Object["metadata"].(map[string]any)
		delete(got, "managedFields")
		wantMeta, _ := want["metadata"].(map[string]any)
		if wantMeta == nil {
			wantMeta = map[string]any{}
		}
		if !reflect.DeepEqual(got, wantMeta) {
			t.Fatalf("case %d: metaView\n%#v\nconverter\n%#v", i, got, wantMeta)
		}
	}
}

// metaView names every field of ObjectMeta and OwnerReference: a field a
// later apimachinery adds fails here, not silently in the view.
func TestMetaViewKnowsEveryField(t *testing.T) {
	known := map[reflect.Type]string{
		reflect.TypeOf(metav1.ObjectMeta{}):     "name generateName namespace selfLink uid resourceVersion generation creationTimestamp deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences finalizers managedFields",
		reflect.TypeOf(metav1.OwnerReference{}): "apiVersion kind name uid controller blockOwnerDeletion",
	}
	for typ, names := range known {
		var got []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			got = append(got, name)
		}
		if strings.Join(got, " ") != names {
			t.Errorf("%s has the fields %q; metaView converts %q", typ, got, names)
		}
	}
}

// BenchmarkMetaView is a cached Pod's metadata as a reconcile's view
// converts it, against the reflective converter.
func BenchmarkMetaView(b *testing.B) {
	pod := cachedPod()
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cache.example.com/v1", Kind: "RedisCluster", Name: "r", UID: "u", Controller: new(true), BlockOwnerDeletion: new(true)}}
	pod.CreationTimestamp = metav1.Now()
	var metaField topField
	for _, f := range topFields(reflect.TypeOf(corev1.Pod{})) {
		if f.name == "metadata" {
			metaField = f
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = metaView(&pod.ObjectMeta)
		}
	})
	b.Run("converter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := fieldView(reflect.ValueOf(pod).Elem(), metaField); err != nil {
				b.Fatal(err)
			}
		}
	})
}
