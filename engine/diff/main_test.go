package diff_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.SetLogger()
	// The scheduler's and controller-manager's default client limits (50
	// and 20 QPS) would make a fleet of a thousand CRs slow to converge.
	qps := []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	clustertest.Main(m, localcluster.Options{ExtraArgs: map[string][]string{
		localcluster.KubeScheduler: qps, localcluster.KubeControllerManager: qps,
	}})
}

var redisGVK = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1", Kind: "RedisCluster"}

// copyTemplates copies the project's templates into a directory the test
// may edit.
func copyTemplates(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "templates")
	if out, err := exec.Command("cp", "-r", "../../templates", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy templates: %v: %s", err, out)
	}
	return dst
}

// edited is a copy of the templates with the RedisCluster template's old
// text replaced by new, pair by pair.
func edited(t testing.TB, pairs ...string) string {
	t.Helper()
	return editedFile(t, filepath.Join("rediscluster", "rediscluster.cue"), pairs...)
}

// editedFile is a copy of the templates with the old text of file (below
// the templates directory) replaced by new, pair by pair.
func editedFile(t testing.TB, file string, pairs ...string) string {
	t.Helper()
	dir := copyTemplates(t)
	file = filepath.Join(dir, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("the template has no %q", pairs[i])
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fleet creates n RedisClusters in a fresh namespace (replicas 1 and 2 in
// turn), runs the operator until they settle, and stops it: the cluster is
// then as the controller left it, and only diff talks to it.
func fleet(t testing.TB, n int) string {
	return fleetOf(t, n, func(i int) int64 { return int64(1 + i%2) })
}

// fleetOf is fleet with replicas(i) Pods for the i-th CR.
func fleetOf(t testing.TB, n int, replicas func(int) int64) string {
	t.Helper()
	ns := clustertest.Namespace(t)
	a, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(copyTemplates(t), ns))
	waitCRD(t)
	cfg := clustertest.Config()
	cfg.QPS, cfg.Burst = 1000, 2000
	c := newClient(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				errs <- c.Create(context.Background(), redisCR(ns, fmt.Sprintf("r%04d", i), replicas(i)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, c, ns, n)
	a.Settled(t, 0, time.Minute)
	stop()
	return ns
}

// waitCRD waits for the operator to install the RedisCluster CRD.
func waitCRD(t testing.TB) {
	t.Helper()
	c := newClient(t, clustertest.Config())
	clustertest.Eventually(t, time.Minute, func() string {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		err := c.Get(context.Background(), client.ObjectKey{Name: "redisclusters.cache.example.com"}, crd)
		if err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, x := range conds {
			if m, _ := x.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return ""
			}
		}
		return "CRD not established"
	})
}

// waitReady waits for the n RedisClusters of ns to be Ready.
func waitReady(t testing.TB, c client.Client, ns string, n int) {
	t.Helper()
	waitKindReady(t, c, redisGVK, ns, n)
}

// waitKindReady waits for the n CRs of kind gvk in ns to be Ready.
func waitKindReady(t testing.TB, c client.Client, gvk schema.GroupVersionKind, ns string, n int) {
	t.Helper()
	clustertest.Eventually(t, 3*time.Minute+time.Duration(n)*300*time.Millisecond, func() string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		ready := 0
		for _, cr := range list.Items {
			conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
			for _, x := range conds {
				if m, _ := x.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
					ready++
				}
			}
		}
		if ready != n {
			return fmt.Sprintf("%d of %d %ss Ready", ready, n, gvk.Kind)
		}
		return ""
	})
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writes records every request that would change the cluster: a POST, PUT,
// PATCH or DELETE without dryRun=All.
type writes struct {
	mu   sync.Mutex
	seen []string
	all  int
}

func (w *writes) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && req.Method != http.MethodHead {
				w.mu.Lock()
				w.all++
				if req.URL.Query().Get("dryRun") != "All" {
					w.seen = append(w.seen, req.Method+" "+req.URL.Path)
				}
				w.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// run diffs namespace ns with the templates of dir, failing the test on a
// write that is not a dry run.
func run(t testing.TB, dir string, opts diff.Options) *diff.Report {
	t.Helper()
	set, err := template.Load(dir)
	if set == nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	w := &writes{}
	cfg := clustertest.Config()
	cfg.QPS, cfg.Burst = operator.DefaultQPS, operator.DefaultBurst // as cueop diff
	opts.Client = newClient(t, w.wrap(cfg))
	opts.Set = set
	r, err := diff.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.seen) > 0 {
		t.Errorf("diff wrote to the API server: %v", w.seen)
	}
	t.Logf("%d dry-run requests", w.all)
	return r
}

func text(t testing.TB, r *diff.Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// redis is the summary of the RedisCluster kind.
func redis(t testing.TB, r *diff.Report) diff.KindSummary {
	t.Helper()
	for _, k := range r.Kinds {
		if k.Kind == "RedisCluster" {
			return k
		}
	}
	t.Fatalf("no RedisCluster in the report:\n%s", text(t, r))
	return diff.KindSummary{}
}
