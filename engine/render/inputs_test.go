package render_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// TestDigestCoversEveryInput changes each field of render.Inputs in turn,
// by reflection, and checks that the digest changes: a field added to
// Inputs is covered, or this test says how to give it a value.
func TestDigestCoversEveryInput(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	obj := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"},
			"spec":   map[string]any{"replicas": int64(3), "version": v},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": v}}},
		}}
	}
	base := render.Inputs{Kind: k, Parent: redis(map[string]any{"replicas": int64(3)}), Observed: map[string]*unstructured.Unstructured{"pod-0": obj("a")}}
	d0, ok := base.Digest()
	if !ok {
		t.Fatal("no digest")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		changed := base
		cv := reflect.ValueOf(&changed).Elem().Field(i)
		switch x := cv.Interface().(type) {
		case *template.Kind:
			other := *x
			other.Revision = "other"
			cv.Set(reflect.ValueOf(&other))
		case *unstructured.Unstructured:
			cv.Set(reflect.ValueOf(redis(map[string]any{"replicas": int64(4)})))
		case map[string]*unstructured.Unstructured:
			cv.Set(reflect.ValueOf(map[string]*unstructured.Unstructured{"pod-0": obj("b")}))
		case map[string]render.Referenced:
			cv.Set(reflect.ValueOf(map[string]render.Referenced{"settings": {Objects: []*unstructured.Unstructured{obj("b")}}}))
		default:
			t.Fatalf("Inputs.%s: give this test a changed value of type %s", f.Name, f.Type)
		}
		d, ok := changed.Digest()
		if !ok || d == d0 {
			t.Errorf("Inputs.%s changed and the digest did not", f.Name)
		}
	}
	again := base
	if d, _ := again.Digest(); d != d0 {
		t.Error("the same inputs digest differently")
	}
}

// TestPackRoundTrip: a packed result unpacks to an equal result.
func TestPackRoundTrip(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	res, err := render.Render(k, redis(map[string]any{"replicas": int64(3)}), fullPods(t), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A child's wave and readiness (waves, readyWhen) are kept too, and
	// whether Ready is the default.
	ready := false
	res.Children[0].Wave, res.Children[0].ReadyWhen = 1, &ready
	res.ReadyByDefault = true
	p, ok := render.Pack(res)
	if !ok {
		t.Fatal("not packable")
	}
	if got := p.Unpack(); !reflect.DeepEqual(got, res) {
		t.Errorf("unpacked\n%+v\nwant\n%+v", got, res)
	}
	t.Logf("packed: %d bytes", p.Size())
	// What another process sends of it is taken back whole.
	data, children, resReady, conditions := p.Parts()
	again, err := render.PackedOf(bytes.Clone(data), slices.Clone(children), resReady, conditions)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Unpack(); !reflect.DeepEqual(got, res) {
		t.Errorf("PackedOf unpacked\n%+v\nwant\n%+v", got, res)
	}
}

// FuzzPackedOf: PackedOf refuses, without panicking, any data that is not
// one object per child, a status and the immutable values; what it takes
// unpacks without panicking.
func FuzzPackedOf(f *testing.F) {
	k := loadKind(f, "cache.example.com", "RedisCluster")
	res, err := render.Render(k, redis(map[string]any{"replicas": int64(2)}), nil, render.Options{})
	if err != nil {
		f.Fatal(err)
	}
	p, _ := render.Pack(res)
	data, _, _, _ := p.Parts()
	f.Add(data, uint8(len(res.Children)))
	f.Add(data[:len(data)/2], uint8(len(res.Children)))
	f.Add([]byte{1, 7, 0xff, 0xff, 0xff, 0xff, 0x0f}, uint8(1))
	f.Add([]byte{0, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		children := make([]render.Child, n)
		p, err := render.PackedOf(data, children, render.Readiness{}, nil)
		if err != nil {
			return
		}
		if got := p.Unpack(); len(got.Children) != int(n) {
			t.Fatalf("%d children unpacked, want %d", len(got.Children), n)
		}
	})
}

// TestDigestOfReferencedByVersion: a referenced object read from the API
// server (uid and resourceVersion set) counts by its identity and version,
// so its metadata alone gives the digest of the whole object, and a new
// version changes it; an object without them counts by its content.
func TestDigestOfReferencedByVersion(t *testing.T) {
	k := loadKind(t, "cache.example.com", "RedisCluster")
	cm := func(rv string, data map[string]any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings", "namespace": "ns"}}}
		if data != nil {
			o.Object["data"] = data
		}
		if rv != "" {
			o.SetUID("u-1")
			o.SetResourceVersion(rv)
		}
		return o
	}
	digest := func(o *unstructured.Unstructured) render.Digest {
		in := render.Inputs{Kind: k, Parent: redis(map[string]any{"replicas": int64(3)}),
			Referenced: map[string]render.Referenced{"settings": {Objects: []*unstructured.Unstructured{o}}}}
		d, ok := in.Digest()
		if !ok {
			t.Fatal("no digest")
		}
		return d
	}
	if digest(cm("7", nil)) != digest(cm("7", map[string]any{"a": "1"})) {
		t.Error("the metadata of an object digests differently from the whole object at the same resourceVersion")
	}
	if digest(cm("7", nil)) == digest(cm("8", nil)) {
		t.Error("a new resourceVersion left the digest as it was")
	}
	if digest(cm("", map[string]any{"a": "1"})) == digest(cm("", map[string]any{"a": "2"})) {
		t.Error("an object without a resourceVersion is not digested by its content")
	}
}
