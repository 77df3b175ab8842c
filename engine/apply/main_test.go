package apply_test

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// Only etcd and kube-apiserver: server-side apply, validation and deletes
// are all the API server's.
func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{ControlPlaneOnly: true})
}

// env is one test's namespace and a client whose requests are counted.
type env struct {
	ns       string
	c        client.Client
	requests *testkit.Requests
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ns := clustertest.Namespace(t)
	cfg, reqs := testkit.CountRequests(clustertest.Config())
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ns: ns, c: c, requests: reqs}
}

// live reads obj back from the API server, as the informer cache would hold
// it; nil when it does not exist.
func (e *env) live(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), u)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err != nil {
		return nil
	}
	return u
}

// edit changes obj with an update under another field manager, as kubectl
// edit does, retrying when another writer got there first.
func (e *env) edit(t testing.TB, obj *unstructured.Unstructured, change func(live *unstructured.Unstructured)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := e.live(t, obj)
		change(live)
		return e.c.Update(context.Background(), live, client.FieldOwner("kubectl-edit"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	loadOnce sync.Once
	redis    *template.Kind
	loadErr  error
)

// rendered renders a RedisCluster named name with one replica in ns and
// returns its children by id (config, pod-0, service).
func rendered(t testing.TB, ns, name string) map[string]*unstructured.Unstructured {
	t.Helper()
	loadOnce.Do(func() {
		var set *template.Set
		if set, loadErr = template.Load("../../templates"); loadErr == nil {
			redis = set.Lookup("cache.example.com", "RedisCluster")
		}
	})
	if loadErr != nil || redis == nil {
		t.Fatalf("load templates: %v (RedisCluster: %v)", loadErr, redis != nil)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "0b0c4a3e-5b8f-4c0e-9a55-7f1e7a1b2c3d"},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
	res, err := render.Render(redis, parent, nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, c := range res.Children {
		out[c.ID] = c.Object
	}
	return out
}
