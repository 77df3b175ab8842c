package render_test

import (
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
)

// FuzzRender feeds random specs (JSON, as the API server would hand them
// over) to render: it must return children or a render.Error, never panic,
// and never more children than the budget.
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"replicas": 5}`, `{"replicas": 0}`, `{"replicas": -1}`, `{"replicas": 1e9}`,
		`{"replicas": 2.5}`, `{"version": "7.2"}`, `{"version": 7}`, `{"version": ""}`,
		`{"replicas": "3"}`, `{"extra": {"a": [1, 2]}}`, `{"replicas": null}`, `[]`, `"x"`,
	} {
		f.Add(seed)
	}
	k := loadKind(f, "cache.example.com", "RedisCluster")
	f.Fuzz(func(t *testing.T, spec string) {
		cr := redis(nil)
		obj := map[string]any{}
		if err := json.Unmarshal([]byte(`{"spec":`+spec+`}`), &obj); err != nil {
			return
		}
		u := &unstructured.Unstructured{}
		b, _ := json.Marshal(map[string]any{"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(), "metadata": cr.Object["metadata"], "spec": obj["spec"]})
		if err := u.UnmarshalJSON(b); err != nil {
			return
		}
		res, err := render.Render(k, u, nil, render.Options{})
		var rerr *render.Error
		switch {
		case err != nil && !errors.As(err, &rerr):
			t.Fatalf("spec %s: error is not a render.Error: %v", spec, err)
		case err == nil && len(res.Children) > render.DefaultMaxChildren:
			t.Fatalf("spec %s: %d children beyond the budget", spec, len(res.Children))
		case err == nil && len(res.Children) < 3:
			t.Fatalf("spec %s: %d children, want at least a Pod, the Service and the ConfigMap", spec, len(res.Children))
		}
	})
}
