package admissiontest

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
)

// The conversion webhook these tests' CRDs point at: a kind with several
// versions converts through it (kubectl reads at its preferred version,
// v2 of the RedisCluster), served on 127.0.0.1 with the templates'
// conversions, as cueop serves them, in the test binary's process (it ends
// with it).
var (
	convOnce     sync.Once
	convEndpoint *webhook.Endpoint
	convErr      error
)

func conversionEndpoint(t *testing.T) *webhook.Endpoint {
	t.Helper()
	convOnce.Do(func() { convEndpoint, convErr = serveConversions() })
	if convErr != nil {
		t.Fatal(convErr)
	}
	return convEndpoint
}

func serveConversions() (*webhook.Endpoint, error) {
	set, err := template.Load(filepath.Join(repo, "templates"))
	if err != nil {
		return nil, err
	}
	reg := &webhook.Registry{}
	for _, k := range set.Kinds {
		c, err := convert.New(k)
		if err != nil {
			return nil, err
		}
		if c != nil {
			reg.Set(k.Resource.GroupVersionKind().GroupKind(), c.Lenient())
		}
	}
	e, _, err := webhook.ServeLocal(reg) // served until the test process ends
	return e, err
}

// pointed is the YAML stream yamls with every CRD that converts by webhook
// pointed at conversionEndpoint.
func pointed(t *testing.T, yamls string) string {
	t.Helper()
	docs := strings.Split(yamls, "\n---\n")
	for i, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
			continue // not an object: kubectl says what is wrong with it
		}
		if err := conversionEndpoint(t).Point(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = string(b)
	}
	return strings.Join(docs, "\n---\n")
}
