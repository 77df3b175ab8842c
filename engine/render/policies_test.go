package render_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

// kindWithPolicies compiles a kind with the given children and policies.
func kindWithPolicies(t *testing.T, children, policies string) *render.Result {
	t.Helper()
	res, err := render.Render(kindWithChildren(t, children+"\n}\npolicies: {\n"+policies), app(2), nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const policyChildren = `cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
pod: {apiVersion: "v1", kind: "Pod", metadata: name: "p"}
pvc: {apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {name: "d", annotations: {"cueop.dev/prune": "never", keep: "me"}}}`

func TestRenderPolicies(t *testing.T) {
	res := kindWithPolicies(t, policyChildren, `cm: {recreate: parent.spec.n > 1, cascade: "background", onDelete: "retain", adopt: "uncontrolled"}
pod: adopt: "never"`)
	want := map[string]render.Policy{
		"cm":  {Recreate: true, Cascade: "background", Prune: "always", OnDelete: "retain", Adopt: "uncontrolled"},
		"pod": {Recreate: true, Cascade: "background", Prune: "always", OnDelete: "delete", Adopt: "never"},
		"pvc": {Recreate: false, Cascade: "orphan", Prune: "never", OnDelete: "retain", Adopt: "released"}, // a data kind
	}
	wantAnn := map[string]map[string]string{
		"cm":  {wellknown.AnnotationOnDelete: "retain"},
		"pod": nil,
		// The template's policy annotation is not the policy; a data
		// kind's policy is always recorded.
		"pvc": {"keep": "me", wellknown.AnnotationPrune: "never", wellknown.AnnotationOnDelete: "retain"},
	}
	for _, c := range res.Children {
		if c.Policy != want[c.ID] {
			t.Errorf("%s: policy %+v, want %+v", c.ID, c.Policy, want[c.ID])
		}
		if got := c.Object.GetAnnotations(); !equalMaps(got, wantAnn[c.ID]) {
			t.Errorf("%s: annotations %v, want %v", c.ID, got, wantAnn[c.ID])
		}
	}
	res = kindWithPolicies(t, policyChildren, `pvc: prune: "always"`)
	if got := res.Children[2].Object.GetAnnotations(); got[wellknown.AnnotationPrune] != "always" || got[wellknown.AnnotationOnDelete] != "retain" || got["keep"] != "me" {
		t.Errorf("pvc annotations %v, want prune: always, onDelete: retain beside the template's", got)
	}
}

// TestDataKindsDefaults: a data kind is released on prune and with its CR
// unless the template opts out; the administrator's data kinds replace
// the default list.
func TestDataKindsDefaults(t *testing.T) {
	res, err := render.Render(kindWithChildren(t, policyChildren), app(1), nil, render.Options{DataKinds: render.MustKindSet("ConfigMap")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]render.Policy{
		"cm":  {Cascade: "orphan", Prune: "never", OnDelete: "retain", Adopt: "released"},
		"pod": {Recreate: true, Cascade: "background", Prune: "always", OnDelete: "delete", Adopt: "released"},
		"pvc": {Cascade: "orphan", Prune: "always", OnDelete: "delete", Adopt: "released"}, // not listed
	}
	for _, c := range res.Children {
		if c.Policy != want[c.ID] {
			t.Errorf("%s: policy %+v, want %+v", c.ID, c.Policy, want[c.ID])
		}
	}
}

// TestLivePolicy decides from the live object: its annotations, else its
// kind's default, so that a claim whose annotations never reached it is
// released, never deleted.
func TestLivePolicy(t *testing.T) {
	obj := func(kind string, ann map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind(kind)
		o.SetAnnotations(ann)
		return o
	}
	for name, tc := range map[string]struct {
		live *unstructured.Unstructured
		opts render.Options
		want render.Policy
	}{
		"claim, no annotation":     {obj("PersistentVolumeClaim", nil), render.Options{}, render.Policy{Prune: "never", OnDelete: "retain"}},
		"claim, opted out":         {obj("PersistentVolumeClaim", map[string]string{wellknown.AnnotationPrune: "always", wellknown.AnnotationOnDelete: "delete"}), render.Options{}, render.Policy{Prune: "always", OnDelete: "delete"}},
		"configmap, no annotation": {obj("ConfigMap", nil), render.Options{}, render.Policy{Prune: "always", OnDelete: "delete"}},
		"configmap, retained":      {obj("ConfigMap", map[string]string{wellknown.AnnotationOnDelete: "retain"}), render.Options{}, render.Policy{Prune: "always", OnDelete: "retain"}},
		"configmap, a data kind":   {obj("ConfigMap", nil), render.Options{DataKinds: render.MustKindSet("ConfigMap")}, render.Policy{Prune: "never", OnDelete: "retain"}},
		"claim, bad annotation":    {obj("PersistentVolumeClaim", map[string]string{wellknown.AnnotationPrune: "yes"}), render.Options{}, render.Policy{Prune: "never", OnDelete: "retain"}},
	} {
		if got := tc.opts.LivePolicy(tc.live); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestRenderPoliciesWithoutField(t *testing.T) {
	res, err := render.Render(kindWithChildren(t, policyChildren), app(1), nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Children[1].Policy; !p.Recreate || p.Prune != "always" || p.OnDelete != "delete" || p.Adopt != "released" {
		t.Errorf("pod policy %+v, want the defaults (recreated)", p)
	}
	if ann := res.Children[2].Object.GetAnnotations(); ann[wellknown.AnnotationPrune] != "never" || ann[wellknown.AnnotationOnDelete] != "retain" {
		t.Errorf("pvc annotations %v: want the data kind's default policy recorded", ann)
	}
}

func TestRenderRefusesPolicies(t *testing.T) {
	for name, tc := range map[string]struct{ policies, want string }{
		"unknown id":          {`cmm: prune: "never"`, `policies.cmm: no child "cmm" is rendered`},
		"pvc recreate":        {`pvc: recreate: true`, "policies.pvc: recreate: a PersistentVolumeClaim is never recreated"},
		"cascade alone":       {`cm: cascade: "orphan"`, "policies.cm: cascade applies only to a child with recreate: true"},
		"bad value from spec": {`cm: prune: [if parent.spec.n > 1 {"sometimes"}, "always"][0]`, "policies.cm.prune"},
		"bad adopt from spec": {`cm: adopt: [if parent.spec.n > 1 {"always"}, "never"][0]`, "policies.cm.adopt"},
	} {
		t.Run(name, func(t *testing.T) {
			k := kindWithChildren(t, policyChildren+"\n}\npolicies: {\n"+tc.policies)
			_, err := render.Render(k, app(2), nil, render.Options{})
			renderError(t, err, wellknown.ReasonTemplateError, tc.want, "app.cue:")
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
