package golden_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/internal/testkit"
)

// TestConvertedCaseFailsOnAWrongForm: a conversion case whose expected
// form differs from the conversion fails with the diff.
func TestConvertedCaseFailsOnAWrongForm(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	wrong := strings.Replace(testkit.Read(t, "../../testdata", "rediscluster/convert-v1-to-v2.txtar"), "  size: 5", "  size: 4", 1)
	dir := testkit.Dir(t, map[string]string{"rediscluster/c.txtar": wrong})
	results, err := golden.Run(set, dir, false, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Err == nil || !strings.Contains(results[0].Err.Error(), "converted.yaml differs") ||
		!strings.Contains(results[0].Err.Error(), "+   size: 5") {
		t.Errorf("results = %+v, want converted.yaml to differ at size", results)
	}
}

// TestToHubOfADroppedVersion: a parent at a version its kind no longer
// serves, the kind serving one version (a sample left at v1 once v1 is
// dropped), is an error naming the version, not a crash (cueop dev
// computes the kinds' rights from the samples on every edit).
func TestToHubOfADroppedVersion(t *testing.T) {
	set := templatetest.Load(t, "../../templates")
	for _, k := range set.Kinds {
		if len(k.Versions) > 1 {
			continue
		}
		parent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.Resource.Group + "/v0dropped", "kind": k.Resource.Kind,
			"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{},
		}}
		_, err := golden.ToHub(k, parent)
		if err == nil || !strings.Contains(err.Error(), `version "v0dropped" is not served (served: `+k.Resource.Version+`)`) {
			t.Errorf("ToHub(%s at v0dropped) = %v, want the version not served", k.Name, err)
		}
		return
	}
	t.Fatal("no kind of one version in templates/")
}
