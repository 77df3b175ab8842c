package migrate

import (
	"encoding/json"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestPending(t *testing.T) {
	for _, c := range []struct {
		name   string
		stored []string
		from   []string
	}{
		{"stored at the storage version only", []string{"v2"}, nil},
		{"storage switched", []string{"v1", "v2"}, []string{"v1"}},
		{"two older versions", []string{"v1", "v1beta1", "v2"}, []string{"v1", "v1beta1"}},
		{"the storage version not listed yet", []string{"v1"}, []string{"v1"}},
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}, {Name: "v2", Storage: true}}
		crd.Status.StoredVersions = c.stored
		to, from := Pending(crd)
		if to != "v2" || !slices.Equal(from, c.from) {
			t.Errorf("%s: Pending = %s, %v; want v2, %v", c.name, to, from, c.from)
		}
	}
}

// TestResumeKeepsRefused: a pass resumed from a checkpoint taken after a
// refused rewrite counts it, so that it does not finish.
func TestResumeKeepsRefused(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Annotations = map[string]string{Annotation: `{"to":"v2","continue":"next","listed":4,"migrated":3,"pages":2,"refused":1}`}
	p := Progress{To: "v2"}
	if cont := resume(crd, &p); cont != "next" || p.Refused != 1 || p.Listed != 4 || !p.Resumed {
		t.Fatalf("resume = %q, %+v; want next, 1 refused of 4 listed, resumed", cont, p)
	}
	saved := Progress{To: "v2", Refused: 2}
	b, err := json.Marshal(checkpointOf(&saved, "more"))
	if err != nil {
		t.Fatal(err)
	}
	crd.Annotations[Annotation] = string(b)
	p = Progress{To: "v2"}
	if resume(crd, &p); p.Refused != 2 {
		t.Errorf("a saved checkpoint resumed with %d refused, want 2", p.Refused)
	}
}
