package migrate

import (
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
