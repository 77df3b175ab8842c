package reconcile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// TestClaimOf: a CR applies over an object of its child's name only when
// it controls it, adopts one with no controller only as the child's policy
// says (by default only what cueop released from a CR of the same kind,
// namespace and name), and never one another controller owns.
func TestClaimOf(t *testing.T) {
	yes := true
	other := metav1.OwnerReference{APIVersion: "web.example.com/v1", Kind: "StaticSite", Name: "shop", UID: "other", Controller: &yes}
	mine := metav1.OwnerReference{APIVersion: "cache.example.com/v1", Kind: "RedisCluster", Name: "r", UID: crUID, Controller: &yes}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ref", UID: "ref"} // not a controller
	earlier := mine
	earlier.UID = "deleted-uid" // a CR of the same name, deleted and created again
	for name, tc := range map[string]struct {
		refs     []metav1.OwnerReference
		released string
		adopt    string
		want     Claim
		wantText []string
	}{
		"controlled by the CR":   {refs: []metav1.OwnerReference{owner, mine}, want: Claim{}},
		"another controller":     {refs: []metav1.OwnerReference{other}, adopt: render.AdoptUncontrolled, wantText: []string{"children.service: Service ns/shop exists and is controlled by StaticSite ns/shop"}},
		"no controller, default": {refs: []metav1.OwnerReference{owner}, wantText: []string{"Service ns/shop exists with no controller", `adopt: "uncontrolled"`}},
		"controlled by an earlier CR of the name": {refs: []metav1.OwnerReference{earlier}, adopt: render.AdoptUncontrolled,
			wantText: []string{"is controlled by an earlier RedisCluster ns/r (uid deleted-uid), not this one (uid " + string(crUID) + ")"}},
		"no controller, adopt uncontrolled": {adopt: render.AdoptUncontrolled, want: Claim{Adopt: true}},
		"released from this CR":             {released: "RedisCluster.cache.example.com ns/r", want: Claim{Adopt: true, Released: true}},
		"released from another CR":          {released: "RedisCluster.cache.example.com ns/q", wantText: []string{"with no controller (released from RedisCluster.cache.example.com ns/q)"}},
		"released, adopt never":             {released: "RedisCluster.cache.example.com ns/r", adopt: render.AdoptNever, wantText: []string{"with no controller (released from RedisCluster.cache.example.com ns/r)"}},
		"released from a kind of the name in another group": {released: "RedisCluster.other.example.org ns/r",
			wantText: []string{"with no controller (released from RedisCluster.other.example.org ns/r)"}},
		"released by a mark without a group": {released: "RedisCluster ns/r", wantText: []string{"with no controller (released from RedisCluster ns/r, a mark without the kind's group or a proof",
			`adopt: "uncontrolled" would take it over`}},
		"released by a mark without a group, adopt never": {released: "RedisCluster ns/r", adopt: render.AdoptNever, wantText: []string{"with no controller (released from RedisCluster ns/r);"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("v1")
			o.SetKind("Service")
			o.SetNamespace("ns")
			o.SetName("shop")
			o.SetOwnerReferences(tc.refs)
			if tc.released != "" {
				o.SetAnnotations(map[string]string{wellknown.AnnotationReleasedFrom: tc.released})
			}
			c := render.Child{ID: "service", Object: o, Policy: render.DefaultPolicy(o.GroupVersionKind().GroupKind(), nil)}
			if tc.adopt != "" {
				c.Policy.Adopt = tc.adopt
			}
			got := ClaimOf(testCR(), c, o)
			if tc.wantText == nil {
				if got != tc.want {
					t.Fatalf("ClaimOf = %+v, want %+v", got, tc.want)
				}
				return
			}
			if got.Adopt {
				t.Fatalf("ClaimOf = %+v, want a conflict", got)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(got.Conflict, w) {
					t.Errorf("conflict %q lacks %q", got.Conflict, w)
				}
			}
		})
	}
}
