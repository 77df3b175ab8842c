package reconcile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestReleaseProof: a release proof verifies for the object, the CR and
// the key it was made for, and for nothing else: not another object's
// uid, kind, group, namespace or name, another CR, another key; a missing
// proof never verifies, nor any proof without a key.
func TestReleaseProof(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	const from = "RedisCluster.cache.example.com ns/shop"
	obj := func(apiVersion, kind, ns, name, uid string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		o.SetUID(types.UID(uid))
		return o
	}
	genuine := obj("v1", "Service", "ns", "shop", "u1")
	proof := ReleaseProof(key, genuine, from)
	if !strings.HasPrefix(proof, "v1:") || proof != ReleaseProof(key, genuine.DeepCopy(), from) {
		t.Fatalf("proof %q is not stable", proof)
	}
	marked := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.SetAnnotations(map[string]string{wellknown.AnnotationReleasedFrom: from, wellknown.AnnotationReleaseProof: proof})
		return o
	}
	if why := proven(key, marked(genuine), from); why != "" {
		t.Fatalf("the genuine proof does not verify: %s", why)
	}
	for name, tc := range map[string]struct {
		o    *unstructured.Unstructured
		from string
		key  []byte
	}{
		"another uid":       {o: marked(obj("v1", "Service", "ns", "shop", "u2")), from: from, key: key},
		"another kind":      {o: marked(obj("v1", "ConfigMap", "ns", "shop", "u1")), from: from, key: key},
		"another group":     {o: marked(obj("other.example.com/v1", "Service", "ns", "shop", "u1")), from: from, key: key},
		"another namespace": {o: marked(obj("v1", "Service", "ns2", "shop", "u1")), from: from, key: key},
		"another name":      {o: marked(obj("v1", "Service", "ns", "shop2", "u1")), from: from, key: key},
		"another CR":        {o: marked(obj("v1", "Service", "ns", "shop", "u1")), from: "RedisCluster.cache.example.com ns/shop2", key: key},
		"another key":       {o: marked(obj("v1", "Service", "ns", "shop", "u1")), from: from, key: []byte(strings.Repeat("x", 32))},
		"no key":            {o: marked(obj("v1", "Service", "ns", "shop", "u1")), from: from},
		"no proof":          {o: obj("v1", "Service", "ns", "shop", "u1"), from: from, key: key},
	} {
		if why := proven(tc.key, tc.o, tc.from); why == "" {
			t.Errorf("%s: the proof verifies", name)
		}
	}
}

// TestProveClaim: an adoption by a released-from mark holds only with its
// proof; without a key (cueop diff) only a missing proof is decided, as a
// conflict naming the child, the object and why; other claims pass as
// they are.
func TestProveClaim(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	cr := testCR()
	svc := func(ann map[string]string) (render.Child, *unstructured.Unstructured) {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind("Service")
		o.SetNamespace("ns")
		o.SetName("shop")
		o.SetUID("u1")
		o.SetAnnotations(ann)
		return render.Child{ID: "service", Object: o, Policy: render.DefaultPolicy(o.GroupVersionKind().GroupKind(), nil)}, o
	}
	from := subjectOf(cr)
	c, forged := svc(map[string]string{wellknown.AnnotationReleasedFrom: from})
	claim := ClaimOf(cr, c, forged)
	if !claim.Adopt || !claim.Released {
		t.Fatalf("ClaimOf of a released-from mark = %+v, want an adoption resting on the mark", claim)
	}
	for _, k := range [][]byte{nil, key} {
		got := ProveClaim(k, c, forged, claim)
		if got.Adopt || !strings.Contains(got.Conflict, "children.service: Service ns/shop exists with no controller, marked released from "+from+", but it has no cueop.dev/release-proof annotation") {
			t.Errorf("key %v: a mark without a proof: %+v, want a conflict naming the child and the missing proof", k != nil, got)
		}
	}
	if HasReleaseProof(forged) {
		t.Errorf("HasReleaseProof of an object without one")
	}
	c, genuine := svc(map[string]string{wellknown.AnnotationReleasedFrom: from})
	genuine.SetAnnotations(map[string]string{wellknown.AnnotationReleasedFrom: from, wellknown.AnnotationReleaseProof: ReleaseProof(key, genuine, from)})
	if got := ProveClaim(key, c, genuine, claim); got != claim {
		t.Errorf("the genuine proof: %+v, want %+v", got, claim)
	}
	if !HasReleaseProof(genuine) {
		t.Errorf("HasReleaseProof of an object with one")
	}
	if got := ProveClaim(nil, c, genuine, claim); got.Adopt || !strings.Contains(got.Conflict, "no release key") {
		t.Errorf("no key: %+v, want a conflict", got)
	}
	uncontrolled := Claim{Adopt: true}
	if got := ProveClaim(nil, c, forged, uncontrolled); got != uncontrolled {
		t.Errorf(`adopt: "uncontrolled": %+v, want it as it is`, got)
	}
}
