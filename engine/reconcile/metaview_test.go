package reconcile

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/randfill"
)

// viewOf's metadata (metaView and managedEntries) is what toUnstructured,
// the reflective converter of whole children, gives of it, for several kinds,
// on random metadata where each field is absent, empty or set: zero and nil
// values, empty maps and slices, times in and out of UTC, zero with a
// location, before 1970 and past the year 9999, every optional pointer.
func TestMetaViewAsConverter(t *testing.T) {
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
			switch c.Intn(6) {
			case 0:
			case 1:
				*tm = metav1.NewTime(time.Unix(c.Int63n(1<<34), 0).In(time.FixedZone("x", 3600)))
			case 2: // zero, with a location
				*tm = metav1.NewTime(time.Time{}.In(time.FixedZone("y", -7200)))
			case 3: // before 1970
				*tm = metav1.NewTime(time.Unix(-c.Int63n(1<<36), 0))
			case 4:
				*tm = metav1.NewTime(time.Date(10000+c.Intn(1000), 1, 2, 3, 4, 5, 6, time.UTC))
			default:
				*tm = metav1.NewTime(time.Unix(c.Int63n(1<<34), c.Int63n(1e9)).UTC())
			}
		},
	)
	kinds := []client.Object{&corev1.Pod{}, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}}
	for i := range 4000 {
		obj := kinds[i%len(kinds)].DeepCopyObject().(client.Object)
		om := reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
		if r.Intn(10) > 0 {
			fill.Fill(om)
		}
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		before := obj.DeepCopyObject()
		want, err := toUnstructured(before.DeepCopyObject(), gvks[0]) // observe.go
		if err != nil {
			t.Fatal(err)
		}
		wantMeta := want.Object["metadata"]
		u, err := viewOf(obj, gvks[0], map[string]bool{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Object["metadata"]; !reflect.DeepEqual(got, wantMeta) {
			t.Fatalf("case %d, %s: metaView\n%#v\nconverter\n%#v", i, gvks[0].Kind, got, wantMeta)
		}
		if !reflect.DeepEqual(obj, before) {
			t.Fatalf("case %d, %s: viewOf changed the object", i, gvks[0].Kind)
		}
	}
}

// metaView names every field of ObjectMeta and OwnerReference: a field a
// later apimachinery adds fails here, not silently in the view (a changed
// tag option or format is TestMetaViewAsConverter's to find).
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
// converts it, against the reflective converter (both without the
// managedFields, which managedEntries converts).
func BenchmarkMetaView(b *testing.B) {
	pod := cachedPod()
	pod.ManagedFields = nil
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
